package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A traffic policy hot-swapped under load (API.md §20): while eight connections keep sending requests
 * with bodies (small ones read whole, large ones streamed behind the WAF's 8 KiB prefix), the edge is
 * given six policy versions in turn, each denying a different path. No ordinary request fails or loses
 * a byte, and each version decides from the moment it is applied: its own path is refused, the previous
 * version's path passes again.
 */
@Timeout(120)
class WafHotSwapTest {
  @TempDir Path dir;

  static JsonObject waf(int v) {
    JsonObject policy = new JsonObject().put("mode", "enforce").put("rules", new JsonArray().add(new JsonObject().put("id", "blocked-" + v)
        .put("expression", "request.path_normalized == '/blocked-" + v + "'")
        .put("action", new JsonObject().put("type", "deny").put("status", 403).put("title", "Refused by version " + v))));
    return new JsonObject().put("version", Integer.toString(v))
        .put("enforce", new JsonObject().put("version", v).put("probe", "nonce-" + v).put("policy", policy)).putNull("shadow");
  }

  @Test
  void aPolicySwappedUnderLoadFailsNoRequestAndDecidesFromItsFirstRequest() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain())) {
      String id = IngressFixture.routeId();
      JsonObject route = IngressFixture.route(id, "app.example.com", "/", IngressFixture.MESH_A, a.port());
      Vertx vertx = Vertx.vertx();
      HttpClient client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true), new PoolOptions().setHttp1MaxSize(8));
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger ok = new AtomicInteger();
      AtomicInteger stopped = new AtomicInteger();
      Map<String, Integer> failures = new ConcurrentHashMap<>();
      int port = f.port();
      try {
        for (int v = 1; v <= 6; v++) {
          int version = v;
          f.routes.set(new JsonObject().put("version", "1." + v).put("routes", new JsonArray().add(route)).put("waf", waf(v)));
          Await.until("policy version " + v + " applied", 15_000, () -> Integer.toString(version).equals(f.agent.ingress().waf().held().version()));
          if (v == 1) for (int i = 0; i < 8; i++) loop(client, port, stop, ok, stopped, failures);
          int before = ok.get();
          Await.until("requests under version " + v, 15_000, () -> ok.get() > before + 150);
          // the version in force decides: its path refused, the previous version's path passes again
          assertEquals(403, status(client, port, "/blocked-" + v), "version " + v + " refuses its path");
          if (v > 1) assertEquals(200, status(client, port, "/blocked-" + (v - 1)), "version " + (v - 1) + "'s rule is gone");
        }
      } finally {
        stop.set(true);
        Await.until("the loops stopped", 15_000, () -> stopped.get() == 8);
        client.close().await(5, TimeUnit.SECONDS);
        vertx.close().await(5, TimeUnit.SECONDS);
      }
      assertTrue(failures.isEmpty(), "failed requests: " + failures + " of " + ok.get());
      IngressCounters.Waf w = f.agent.ingress().counters().of(id).waf;
      assertTrue(w.evaluated >= ok.get(), "every request was evaluated: " + w.evaluated + " of " + ok.get());
      assertEquals(6, w.denied, "exactly the six probes of a version's own path were denied");
      assertEquals(0, w.errors + w.busy);
    }
  }

  /**
   * A burst of versions (a new one every 20 ms for 3 s, each moving the routes version too) costs the edge
   * at most one acknowledgement heartbeat a second on top of its interval (1 s here), and compiles never
   * queue up: the edge ends on the last version, not somewhere in the backlog.
   */
  @Test
  void aBurstOfVersionsIsAcknowledgedAtMostOnceASecondAndEndsOnTheLast() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain())) {
      JsonObject route = IngressFixture.route(IngressFixture.routeId(), "app.example.com", "/", IngressFixture.MESH_A, a.port());
      f.routes.set(new JsonObject().put("version", "1.1").put("routes", new JsonArray().add(route)).put("waf", waf(1)));
      Await.until("policy version 1 applied", 15_000, () -> "1".equals(f.agent.ingress().waf().held().version()));
      String node = f.nodeId();
      int before = f.fake.heartbeats(node).size();
      long t0 = System.nanoTime();
      int v = 1;
      while (System.nanoTime() - t0 < 3_000_000_000L) {
        v++;
        f.routes.set(new JsonObject().put("version", "1." + v).put("routes", new JsonArray().add(route)).put("waf", waf(v)));
        Thread.sleep(20); // the burst's pace (the load), not a wait for a result
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      int during = f.fake.heartbeats(node).size() - before;
      int last = v;
      Await.until("the last version " + last + " applied", 15_000, () -> Integer.toString(last).equals(f.agent.ingress().waf().held().version()));
      // the interval's heartbeat plus at most one acknowledgement a second (and one of each in flight at the edges of the burst)
      assertTrue(during <= 2 * Math.ceil(seconds) + 2, during + " heartbeats in " + seconds + " s for " + (last - 1) + " versions");
    }
  }

  private static int status(HttpClient client, int port, String path) throws Exception {
    return client.request(new RequestOptions().setMethod(HttpMethod.GET).setHost("127.0.0.1").setPort(port).setURI(path)
            .putHeader("Host", "app.example.com"))
        .compose(req -> req.send().compose(resp -> resp.body().map(b -> resp.statusCode()))).await(10, TimeUnit.SECONDS);
  }

  /** One connection's loop: every tenth request carries a 40 KiB body (streamed past the WAF's prefix); the target must see every byte. */
  private static void loop(HttpClient client, int port, AtomicBoolean stop, AtomicInteger ok, AtomicInteger stopped, Map<String, Integer> failures) {
    if (stop.get()) {
      stopped.incrementAndGet();
      return;
    }
    int n = ok.get();
    Buffer body = Buffer.buffer(n % 10 == 0 ? "x".repeat(40 * 1024) : "payload-" + n);
    client.request(new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(port).setURI("/swap")
            .putHeader("Host", "app.example.com"))
        .compose(req -> req.send(body).compose(resp -> resp.body().map(answer -> {
          if (resp.statusCode() != 200) throw new IllegalStateException("status " + resp.statusCode() + ": " + answer);
          int got = answer.toJsonObject().getInteger("body_bytes");
          if (got != body.length()) throw new IllegalStateException("the target got " + got + " of " + body.length() + " bytes");
          return true;
        })))
        .recover(e -> {
          failures.merge(String.valueOf(e.getMessage()), 1, Integer::sum);
          return Future.succeededFuture(false);
        })
        .onSuccess(passed -> {
          if (passed) ok.incrementAndGet();
          loop(client, port, stop, ok, stopped, failures);
        });
  }
}
