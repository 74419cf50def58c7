package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Ids;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference agent's watch stream against coordinator stand-ins whose streams the test writes line by
 * line (what a real replica cannot be made to do on demand): a line split over writes, a command that
 * arrives on the stream (its result goes in a heartbeat at once, not at the 60 s interval), a close that
 * ends the credential, and an owner hint that moves heartbeats and stream to another configured URL.
 */
@Timeout(60)
class WatchClientTest {
  static Http http;
  @TempDir Path dir;
  final List<Stand> stands = new ArrayList<>();
  final List<NodeAgent> agents = new ArrayList<>();

  @BeforeAll
  static void client() {
    http = new Http();
  }

  @AfterAll
  static void closeClient() {
    http.close();
  }

  @AfterEach
  void close() {
    agents.forEach(NodeAgent::close);
    stands.forEach(Stand::close);
  }

  /** A coordinator stand-in: enrollment, heartbeats answered with {@link #heartbeatAnswer}, streams held open for the test to write. */
  static final class Stand {
    final Vertx vertx = Vertx.vertx();
    final HttpServer server;
    final List<JsonObject> heartbeats = new ArrayList<>();
    final List<String> watchQueries = new ArrayList<>();
    final AtomicReference<HttpServerResponse> stream = new AtomicReference<>();
    final AtomicInteger enrolled = new AtomicInteger();
    volatile JsonObject heartbeatAnswer = answer(60, 0, 0);
    volatile int watchStatus = 200;

    Stand() throws Exception {
      server = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
        String path = req.path();
        if (path.equals("/v1/nodes")) {
          JsonObject body = new JsonObject(b);
          String id = String.format("nd_01jdwatch%017d", enrolled.incrementAndGet());
          req.response().setStatusCode(201).putHeader("Content-Type", "application/json").end(new JsonObject()
              .put("node", new JsonObject().put("id", id).put("name", body.getString("name")).put("address", "100.64.1.1/32"))
              .put("credential", new JsonObject().put("token", "fake." + id).put("expires", "2099-01-01T00:00:00.000Z")).encode());
        } else if (path.endsWith("/heartbeat")) {
          synchronized (heartbeats) {
            heartbeats.add(new JsonObject(b));
          }
          req.response().putHeader("Content-Type", "application/json").end(heartbeatAnswer.encode());
        } else if (path.endsWith("/watch")) {
          synchronized (watchQueries) {
            watchQueries.add(req.query());
          }
          if (watchStatus != 200) {
            req.response().setStatusCode(watchStatus).putHeader("Content-Type", "application/problem+json")
                .end(new JsonObject().put("status", watchStatus).put("code", "too_many_streams").encode());
            return;
          }
          HttpServerResponse r = req.response().setChunked(true).putHeader("Content-Type", "application/x-ndjson");
          r.write("");
          stream.set(r);
        } else {
          req.response().setStatusCode(404).end();
        }
      })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    String url() {
      return "http://127.0.0.1:" + server.actualPort();
    }

    /** Writes raw text on the open stream (on the server's event loop). */
    void write(String text) {
      HttpServerResponse r = stream.get();
      vertx.runOnContext(v -> r.write(text));
    }

    List<JsonObject> heartbeats() {
      synchronized (heartbeats) {
        return List.copyOf(heartbeats);
      }
    }

    int watches() {
      synchronized (watchQueries) {
        return watchQueries.size();
      }
    }

    void close() {
      try {
        vertx.close().await(5, TimeUnit.SECONDS);
      } catch (Exception e) {
        // best effort
      }
    }
  }

  static JsonObject answer(int intervalS, long peers, long acl) {
    return new JsonObject().put("server_time", "2026-11-28T04:00:00.000Z").put("interval_s", intervalS).put("relay", "fra1")
        .put("peers", new JsonObject().put("version", peers).put("items", new JsonArray()))
        .put("acl", new JsonObject().put("version", acl).put("rules", new JsonArray()))
        .put("services", new JsonArray()).put("ingress", new JsonArray()).put("commands", new JsonArray());
  }

  Stand stand() throws Exception {
    Stand s = new Stand();
    stands.add(s);
    return s;
  }

  NodeAgent agent(String name, String... urls) {
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of(urls)), "enroll.token.for-tests", name, List.of(), dir.resolve(name),
        "127.0.0.1", 0, Backoff.standard(), true));
    agents.add(a);
    return a;
  }

  static AgentSession session(NodeAgent a) {
    return a.verticle().session();
  }

  @Test
  void aSplitAnswerIsAppliedAndACommandOnTheStreamIsReportedAtOnce() throws Exception {
    Stand c = stand();
    NodeAgent a = agent("split", c.url());
    Await.until("the stream", 10_000, () -> c.stream.get() != null);
    assertEquals(1, c.heartbeats().size(), "one heartbeat so far: the interval is 60 s");
    assertEquals("peers=0&acl=0&pki_bundle=&pki_revocations=0", c.watchQueries.get(0), "the versions held: none");

    String rules = "[{\"src\":[\"100.64.0.9/32\"],\"ports\":[\"tcp/22\"]}]";
    String line = answer(60, 0, 0).put("type", "answer").put("seq", 41).put("committed_at", "2026-11-28T04:00:01.000Z")
        .put("acl", new JsonObject().put("version", 41).put("rules", new JsonArray(rules))).encode();
    c.write(line.substring(0, 30));
    c.write(line.substring(30) + "\n{\"type\":\"ping\",\"seq\":41,\"peers\":0,\"acl\":41}\n");
    Await.until("the rules from the stream", 10_000, () -> session(a).aclVersion() == 41);
    assertEquals(1, session(a).aclRuleCount());

    // a lower acl version later (a heartbeat answer computed earlier, a replica behind): never applied
    c.write(answer(60, 0, 0).put("type", "answer").put("acl", new JsonObject().put("version", 30).put("rules", new JsonArray())).encode() + "\n");
    String op = Ids.next("op");
    c.write(answer(60, 0, 0).put("type", "answer").put("seq", 42).put("acl", new JsonObject().put("version", 41).put("unchanged", true))
        .put("commands", new JsonArray().add(new JsonObject().put("id", op).put("kind", "move_relay").put("relay", "nyc1"))).encode() + "\n");
    JsonObject reported = Await.until("the result in a heartbeat", 10_000, () -> c.heartbeats().get(c.heartbeats().size() - 1),
        hb -> hb.containsKey("command_results"));
    assertEquals(op, reported.getJsonArray("command_results").getJsonObject(0).getString("id"));
    assertEquals("nyc1", reported.getString("relay"));
    assertEquals(41, reported.getJsonObject("known").getLong("acl"), "the versions from the stream go back as known");
    assertEquals(1, session(a).aclRuleCount(), "the older rules were not applied");
    String metrics = http.get(a.listenPort(), "/metrics").bodyAsString();
    assertTrue(metrics.contains("mesh_agent_watch_messages_total{type=\"answer\"} 3"), metrics);
    assertTrue(metrics.contains("mesh_agent_watch_messages_total{type=\"ping\"} 1"), metrics);
    assertTrue(metrics.contains("mesh_agent_watch_open 1"), metrics);
    assertEquals("open", http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("watch").getString("state"));
  }

  @Test
  void aDrainingCloseReconnectsWithTheVersionsHeldAndARevokedTokenEndsTheStream() throws Exception {
    Stand c = stand();
    c.heartbeatAnswer = answer(1, 0, 0);
    NodeAgent a = agent("closes", c.url());
    Await.until("the stream", 10_000, () -> c.stream.get() != null);
    c.write(answer(60, 12, 9).put("type", "answer").encode() + "\n");
    Await.until("versions from the stream", 10_000, () -> session(a).peersVersion() == 12);
    HttpServerResponse first = c.stream.get();
    c.write("{\"type\":\"close\",\"reason\":\"draining\",\"retry_after_s\":1}\n");
    Await.until("a new stream", 10_000, () -> c.watches() == 2 && c.stream.get() != first);
    assertEquals("peers=12&acl=9&pki_bundle=&pki_revocations=0", c.watchQueries.get(1), "resumes from the versions it holds");

    c.write("{\"type\":\"close\",\"reason\":\"token_revoked\",\"retry_after_s\":0}\n");
    Await.until("the stream stopped", 10_000,
        () -> "stopped".equals(http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("watch").getString("state")));
    // heartbeats carry on (the heartbeat path reports a revoked credential); no new stream with that credential:
    // three heartbeats at 1 s give a reconnect (0.5-1.5 s after the close) every chance to show
    int hb = c.heartbeats().size();
    Await.until("three more heartbeats", 10_000, () -> c.heartbeats().size() >= hb + 3);
    assertEquals(2, c.watches(), "no attempt after token_revoked");
  }

  @Test
  void anOwnerHintMovesHeartbeatsAndTheStreamToThatConfiguredCoordinatorAndAHintOutsideTheListIsIgnored() throws Exception {
    Stand one = stand();
    Stand two = stand();
    one.heartbeatAnswer = answer(1, 0, 0).put("coordinator", "http://127.0.0.1:9/outside");
    two.heartbeatAnswer = answer(1, 0, 0);
    NodeAgent a = agent("hint", one.url(), two.url());
    Await.until("a stream at the first", 10_000, () -> one.stream.get() != null);
    Await.until("a few heartbeats at the first", 10_000, () -> one.heartbeats().size() >= 3);
    assertEquals(0, two.heartbeats().size(), "a hint outside the list is ignored");

    // the owner is the second, as that replica advertises itself (trailing slash, upper-case host: the same URL)
    String advertised = two.url().replace("http://", "HTTP://") + "/";
    one.write(answer(1, 0, 0).put("type", "answer").put("coordinator", advertised).encode() + "\n");
    Await.until("heartbeats at the second", 10_000, () -> two.heartbeats().size() >= 2);
    Await.until("the stream at the second", 10_000, () -> two.stream.get() != null);
    int before = one.heartbeats().size();
    Await.until("more heartbeats at the second", 10_000, () -> two.heartbeats().size() >= 4);
    assertTrue(one.heartbeats().size() <= before + 1, "none at the first any more (one may have been on its way)");
    assertEquals(two.url(), http.get(a.listenPort(), "/info").bodyAsJsonObject().getString("coordinator"));
  }

  @Test
  void aStreamCutByADyingReplicaReopensAtASurvivorAndStaysThereWhileHintsSettle() throws Exception {
    Stand one = stand();
    Stand two = stand();
    Stand three = stand();
    for (Stand s : List.of(one, two, three)) s.heartbeatAnswer = answer(1, 0, 0);
    NodeAgent a = agent("failover", one.url(), two.url(), three.url());
    Await.until("a stream at the first", 10_000, () -> one.stream.get() != null);
    // the first replica dies: its connections are cut, its port refuses
    one.close();
    Await.until("the stream at a survivor", 15_000, () -> two.stream.get() != null || three.stream.get() != null);
    Stand at = two.stream.get() != null ? two : three;
    Stand other = at == two ? three : two;
    String metrics = http.get(a.listenPort(), "/metrics").bodyAsString();
    assertTrue(metrics.contains("mesh_agent_watch_connects_total{outcome=\"error\"} 0"),
        "the first attempt after the cut went to a survivor, not to the dead one: " + metrics);
    assertTrue(metrics.contains("mesh_agent_watch_connects_total{outcome=\"opened\"} 2"), metrics);

    // the partitions moved: the survivor names the other as the owner. Heartbeats go there at once; the stream that
    // has just re-opened stays where it is for 60-120 s (no second wave of re-opens after a replica's death)
    HttpServerResponse held = at.stream.get();
    int before = other.heartbeats().size();
    at.write(answer(1, 0, 0).put("type", "answer").put("coordinator", other.url()).encode() + "\n");
    Await.until("heartbeats at the other survivor", 10_000, () -> other.heartbeats().size() >= before + 3);
    assertEquals(0, other.watches(), "the stream did not move yet");
    assertSame(held, at.stream.get());
    assertEquals("open", http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("watch").getString("state"));
  }

  @Test
  void aRefusedStreamLeavesTheAgentOnHeartbeatAnswers() throws Exception {
    Stand c = stand();
    c.watchStatus = 409;
    c.heartbeatAnswer = answer(1, 5, 6);
    NodeAgent a = agent("refused", c.url());
    Await.until("a refused attempt", 10_000, () -> c.watches() >= 1);
    c.heartbeatAnswer = answer(1, 7, 8);
    Await.until("the change from a heartbeat answer", 10_000, () -> session(a).aclVersion() == 8 && session(a).peersVersion() == 7);
    String metrics = http.get(a.listenPort(), "/metrics").bodyAsString();
    assertTrue(metrics.contains("mesh_agent_watch_connects_total{outcome=\"refused\"} "), metrics);
    assertTrue(metrics.contains("mesh_agent_watch_open 0"), metrics);
    assertTrue(c.watches() <= 3, "back-off between attempts (1 s, 2 s, ...): " + c.watches());
  }
}
