package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * No policy request can stall the fleet (the hostile probe's finding): evaluations run on the policy
 * work pool, outside every lock, bounded per caller and in all, under a deadline; the probe's
 * document is refused before any evaluation. The proof holds an evaluation on its worker (a hook that
 * production leaves empty) and shows that nothing else waits for it: another team's heartbeats, the
 * probes, enrollments on both replicas, and another team's policy update, which takes the clock's lock
 * that the old code held for the whole evaluation.
 */
@Timeout(300)
class PolicyIsolationTest {
  static final long DEADLINE_MS = 6000;
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("policy.workers", "3", "policy.max_evaluations", "4", "policy.deadline", DEADLINE_MS + "ms"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterEach
  void noHold() {
    PolicyService.evaluating = scope -> { };
  }

  @AfterAll
  static void stop() {
    PolicyService.evaluating = scope -> { };
    if (cluster != null) cluster.close();
  }

  @Test
  void anEvaluationHeldOnItsWorkerHoldsNobodyElse() throws Exception {
    List<Nodes.Enrolled> calm = new ArrayList<>();
    for (int i = 0; i < 3; i++) calm.add(Nodes.enroll(http, a.coordinatorPort(), admin, "calm-" + i, "calm", "prod"));
    Nodes.enroll(http, a.coordinatorPort(), admin, "loud-0", "loud", "prod");
    Nodes.enroll(http, a.coordinatorPort(), admin, "busy-0", "busy", "prod");
    String monitor = Tokens.issue(a, "loud", "prod", Surface.MONITORING).jwt();
    String monitor2 = Tokens.issue(a, "loud", "prod", Surface.MONITORING).jwt();
    String calmMonitor = Tokens.issue(a, "calm", "prod", Surface.MONITORING).jwt();
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger held = new AtomicInteger();
    PolicyService.evaluating = scope -> {
      if (!scope.team().equals("loud") && !scope.team().equals("busy")) return;
      held.incrementAndGet();
      try {
        release.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
    try {
      // two previews of the loud team's monitoring token, held on two of replica a's three policy workers
      List<Future<HttpResponse<Buffer>>> mine = List.of(preview(a, monitor), preview(a, monitor));
      Await.until("both evaluations are running (held)", 30_000, () -> held.get() == 2);

      // its third at once is refused, told when to retry: one caller's share is bounded
      HttpResponse<Buffer> third = Http.await(preview(a, monitor), 30);
      assertEquals(429, third.statusCode(), third.bodyAsString());
      assertEquals("rate_limited", third.bodyAsJsonObject().getString("code"));
      assertTrue(Integer.parseInt(third.getHeader("Retry-After")) > 0);
      // and so is the team's share, whatever token asks (policy.max_per_team): loud cannot take every slot
      HttpResponse<Buffer> sameTeam = Http.await(preview(a, monitor2), 30);
      assertEquals(429, sameTeam.statusCode(), sameTeam.bodyAsString());
      assertTrue(sameTeam.bodyAsJsonObject().getString("detail").contains("loud/prod"), sameTeam.bodyAsString());

      // meanwhile, on the same replica: another team's heartbeats and the probes answer at once
      for (int round = 0; round < 5; round++) {
        for (int i = 0; i < calm.size(); i++) {
          long t0 = System.nanoTime();
          HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + calm.get(i).id() + "/heartbeat",
              calm.get(i).token(), Nodes.beat(round * 10 + i));
          assertEquals(200, r.statusCode(), r.bodyAsString());
          assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 1000, "a heartbeat waited for a held evaluation");
        }
      }
      assertEquals(200, http.get(a.coordinatorPort(), "/healthz").statusCode());
      // enrollments of another team, on both replicas (each takes the clock's lock)
      Nodes.enroll(http, a.coordinatorPort(), admin, "calm-9", "calm", "prod");
      Nodes.enroll(http, b.coordinatorPort(), admin, "calm-10", "calm", "prod");
      // another team's policy update commits (its own evaluation runs beside the held ones)
      JsonObject policy = new JsonObject().put("grants", new JsonArray().add(PolicyCluster.grant("tag:test", "tag:test", "tcp/22")))
          .put("tests", new JsonArray().add(new JsonObject().put("src", "calm-0").put("accept", new JsonArray().add("calm-9:tcp/22"))));
      HttpResponse<Buffer> put = http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=calm&environment=prod", admin, policy);
      assertEquals(200, put.statusCode(), put.bodyAsString());

      // the pool's bound in all: 2 held + 2 of another team (one held, one queued) fill policy.max_evaluations (4); the fifth is refused
      List<Future<HttpResponse<Buffer>>> queued = List.of(preview(a, admin, "busy"), preview(a, admin, "busy"));
      Await.until("four evaluations in flight", 30_000, () -> metric(a, "mesh_work_in_flight{pool=\"policy\"}") == 4);
      HttpResponse<Buffer> fifth = Http.await(preview(a, calmMonitor, "calm"), 30);
      assertEquals(503, fifth.statusCode(), fifth.bodyAsString());
      assertEquals("busy", fifth.bodyAsJsonObject().getString("code"));
      assertTrue(Integer.parseInt(fifth.getHeader("Retry-After")) > 0);

      release.countDown();
      for (Future<HttpResponse<Buffer>> f : mine) assertEquals(200, Http.await(f, 30).statusCode());
      for (Future<HttpResponse<Buffer>> f : queued) assertEquals(200, Http.await(f, 30).statusCode());
    } finally {
      release.countDown();
    }
  }

  @Test
  void anEvaluationPastItsDeadlineStopsWith503AndRetryAfter() throws Exception {
    Nodes.enroll(http, a.coordinatorPort(), admin, "late-0", "late", "prod");
    CountDownLatch entered = new CountDownLatch(1);
    PolicyService.evaluating = scope -> {
      if (!scope.team().equals("late")) return;
      entered.countDown();
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DEADLINE_MS + 500);
      while (System.nanoTime() < until) {
        try {
          Thread.sleep(50); // not synchronisation: the held work itself, busy past its deadline
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    };
    Future<HttpResponse<Buffer>> f = http.request(HttpMethod.POST, b.coordinatorPort(), "/v1/acl/preview?team=late&environment=prod")
        .bearerTokenAuthentication(admin).putHeader("Content-Type", "application/json")
        .sendBuffer(Buffer.buffer(new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray())).put("node", "late-0").encode()));
    assertTrue(entered.await(30, TimeUnit.SECONDS));
    HttpResponse<Buffer> r = Http.await(f, 60);
    assertEquals(503, r.statusCode(), r.bodyAsString());
    assertEquals("deadline_exceeded", r.bodyAsJsonObject().getString("code"));
    assertTrue(Integer.parseInt(r.getHeader("Retry-After")) > 0);
    Await.until("the deadline is counted", 30_000, () -> metric(b, "mesh_work_deadline_exceeded_total{pool=\"policy\"}") >= 1);
  }

  /**
   * The probe's document: 90 grants of 64 selectors that name no node, 35 tests of 64 deny probes
   * between two tags that every one of 45 nodes (32 tags each) carries. Refused at once, before any
   * evaluation, naming the test to shrink: as a preview by a monitoring token, and as a PUT.
   */
  @Test
  void theProbesDocumentIsRefusedBeforeAnyEvaluation() {
    JsonArray tags = new JsonArray();
    tags.add("tag:a").add("tag:b");
    for (int i = 0; tags.size() < 32; i++) tags.add("tag:t" + i);
    for (int i = 0; i < 45; i++) {
      JsonObject body = new JsonObject().put("name", "probe-" + i).put("public_key", Nodes.key()).put("team", "probe")
          .put("environment", "prod").put("tags", tags);
      assertEquals(201, http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body).statusCode());
    }
    JsonObject doc = probeDocument();
    String monitor = Tokens.issue(a, "probe", "prod", Surface.MONITORING).jwt();
    AtomicInteger evaluated = new AtomicInteger();
    PolicyService.evaluating = scope -> evaluated.incrementAndGet();
    String body = new JsonObject().put("policy", doc).put("node", "probe-0").encode();
    assertTrue(body.length() < 64 * 1024, "the probe's body fits the body limit: " + body.length());
    long t0 = System.nanoTime();
    HttpResponse<Buffer> r = http.sendRaw(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/preview?team=probe&environment=prod",
        "application/json", Buffer.buffer(body), monitor);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals(400, r.statusCode(), r.bodyAsString());
    JsonObject error = r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0);
    assertEquals("/policy/tests/0", error.getString("field"), r.bodyAsString());
    assertTrue(error.getString("message").contains("4536000 (source, destination) node pairs"), error.encode());
    assertTrue(ms < 5000, "refused in " + ms + " ms");
    HttpResponse<Buffer> put = http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=probe&environment=prod", admin, doc);
    assertEquals(400, put.statusCode(), put.bodyAsString());
    assertEquals("/tests/0", put.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(0, http.get(a.coordinatorPort(), "/v1/acl?team=probe&environment=prod", admin).bodyAsJsonObject().getLong("version"));
    // the refusal came from counting the pairs: the evaluations started (one each) and checked no pair
    assertEquals(2, evaluated.get());
  }

  static JsonObject probeDocument() {
    List<String> names = new ArrayList<>();
    for (char c : "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray()) names.add(String.valueOf(c));
    for (char c : "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray()) names.add("x" + c);
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 90; i++) {
      grants.add(new JsonObject().put("src", new JsonArray(names.subList(0, 63))).put("dst", new JsonArray().add("*"))
          .put("ports", new JsonArray().add("tcp/1")));
    }
    JsonArray tests = new JsonArray();
    for (int i = 0; i < 35; i++) {
      JsonArray deny = new JsonArray();
      for (int j = 0; j < 64; j++) deny.add("tag:b:icmp");
      tests.add(new JsonObject().put("src", "tag:a").put("deny", deny));
    }
    return new JsonObject().put("grants", grants).put("tests", tests);
  }

  static Future<HttpResponse<Buffer>> preview(Meshplane via, String token) {
    return preview(via, token, "loud");
  }

  static Future<HttpResponse<Buffer>> preview(Meshplane via, String token, String team) {
    JsonObject body = new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray().add(PolicyCluster.grant("*", "*", "tcp/22"))))
        .put("node", team + "-0");
    return http.request(HttpMethod.POST, via.coordinatorPort(), "/v1/acl/preview?team=" + team + "&environment=prod")
        .bearerTokenAuthentication(token).putHeader("Content-Type", "application/json").sendBuffer(Buffer.buffer(body.encode()));
  }

  static double metric(Meshplane via, String series) {
    String text = http.get(via.coordinatorPort(), "/metrics").bodyAsString();
    for (String line : text.split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
    }
    return -1;
  }

}
