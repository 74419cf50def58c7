package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Ids;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference agent in this JVM against a coordinator stand-in that misbehaves on purpose: a
 * coordinator answering 503 forever (the back-off, timed), and one that re-sends its commands as if it
 * had lost their results, across a restart of the agent (the ledger in the state dir).
 */
@Timeout(60)
class AgentBehaviourTest {
  static Http http;
  @TempDir Path dir;

  @BeforeAll
  static void client() {
    http = new Http();
  }

  @AfterAll
  static void closeClient() {
    http.close();
  }

  static NodeAgent start(String url, String name, Path stateDir, Backoff backoff) {
    return NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of(url)), "enroll.token.for-tests", name, List.of("tag:test"), stateDir,
        "127.0.0.1", 0, backoff));
  }

  static List<Long> gapsMs(List<FakeCoordinator.Seen> seen) {
    List<Long> gaps = new ArrayList<>();
    for (int i = 1; i < seen.size(); i++) gaps.add((seen.get(i).nanos() - seen.get(i - 1).nanos()) / 1_000_000);
    return gaps;
  }

  @Test
  void onA503TheWaitsDoubleWithinTheirEnvelopeAndTheCoordinatorIsNeverFlooded() throws Exception {
    try (FakeCoordinator fake = new FakeCoordinator(s -> {
      FakeCoordinator.Answer a = FakeCoordinator.Answer.problem(503, "unavailable");
      return a;
    })) {
      // upper envelope (jitter pinned to its maximum): the waits are exactly base, 2 base, 4 base, ...
      NodeAgent pinned = start(fake.url(), "pinned", dir.resolve("pinned"), new Backoff(200, () -> 1.0));
      // real jitter
      NodeAgent jittered = start(fake.url(), "jittered", dir.resolve("jittered"), new Backoff(200, () -> ThreadLocalRandom.current().nextDouble()));
      try {
        String pinnedId = nodeId(pinned);
        String jitteredId = nodeId(jittered);
        // the sixth try of the pinned agent comes 6.2 s after its first: every try of its first 6 s is seen
        Await.until("6 heartbeats of the pinned agent", 15_000, () -> fake.heartbeats(pinnedId).size() >= 6);
        Await.until("4 heartbeats of the jittered agent", 15_000, () -> fake.heartbeats(jitteredId).size() >= 4);
        List<FakeCoordinator.Seen> p = fake.heartbeats(pinnedId);
        List<Long> gaps = gapsMs(p);
        long[] expected = {200, 400, 800, 1600, 3200};
        for (int i = 0; i < expected.length; i++) {
          assertTrue(gaps.get(i) >= expected[i] - 5 && gaps.get(i) <= expected[i] + 150, "gap " + i + " of " + gaps);
        }
        long inWindow = p.stream().filter(s -> s.nanos() - p.get(0).nanos() <= 6_000_000_000L).count();
        assertTrue(inWindow <= 6, "at most 6 tries in the first 6 s (1 + 5 doublings): " + gaps);

        List<Long> j = gapsMs(fake.heartbeats(jitteredId));
        assertTrue(j.size() >= 3, "the jittered agent keeps trying: " + j);
        for (int i = 0; i < j.size(); i++) {
          long envelope = Math.min(60_000, 200L << i);
          assertTrue(j.get(i) >= 100 - 5 && j.get(i) <= envelope + 150, "gap " + i + " within [base/2, envelope]: " + j);
        }
        assertTrue(j.size() <= 60, "never more than one try per half base: " + j);

        HttpResponse<Buffer> ready = http.get(pinned.listenPort(), "/readyz");
        assertEquals(503, ready.statusCode());
        assertTrue(ready.bodyAsJsonObject().getString("reason").contains("503 unavailable"), ready.bodyAsString());
        String metrics = http.get(pinned.listenPort(), "/metrics").bodyAsString();
        assertTrue(metrics.contains("mesh_agent_heartbeats_total{outcome=\"unavailable\"} " + p.size())
            || metrics.contains("mesh_agent_heartbeats_total{outcome=\"unavailable\"} " + (p.size() + 1)), metrics);
        assertTrue(metrics.contains("mesh_agent_heartbeats_total{outcome=\"ok\"} 0"), metrics);
      } finally {
        pinned.close();
        jittered.close();
      }
    }
  }

  @Test
  void commandsAreExecutedOnceEvenWhenReSentAcrossARestartAndTheNewKeyIsKeptInTheStateDir() throws Exception {
    String rekey = Ids.next("op");
    String move = Ids.next("op");
    String drain = Ids.next("op");
    String drainUnknown = Ids.next("op");
    String unknownKind = Ids.next("op");
    JsonArray commands = new JsonArray().add(new JsonObject().put("id", rekey).put("kind", "rekey"))
        .add(new JsonObject().put("id", move).put("kind", "move_relay").put("relay", "nyc1"))
        .add(new JsonObject().put("id", drain).put("kind", "drain_ingress").put("name", "web"))
        .add(new JsonObject().put("id", drainUnknown).put("kind", "drain_ingress").put("name", "mail"))
        .add(new JsonObject().put("id", unknownKind).put("kind", "reboot"));
    JsonArray ingress = new JsonArray().add(new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443).put("state", "draining"));
    boolean[] resend = {true};
    try (FakeCoordinator fake = new FakeCoordinator(s ->
        FakeCoordinator.Answer.ok(FakeCoordinator.answer(1, ingress, resend[0] ? commands : new JsonArray())))) {
      Path state = dir.resolve("state");
      NodeAgent agent = start(fake.url(), "cmd", state, Backoff.standard());
      String id;
      String enrolledKey;
      JsonObject reported;
      try {
        id = nodeId(agent);
        enrolledKey = fake.all().get(0).body().getString("public_key");
        Await.until("the command results", 10_000, () -> fake.heartbeats(id).stream().anyMatch(s -> s.body().containsKey("command_results")));
        reported = fake.heartbeats(id).stream().filter(s -> s.body().containsKey("command_results")).findFirst().orElseThrow().body();
      } finally {
        agent.close();
      }
      Map<String, JsonObject> results = results(reported);
      assertEquals("succeeded", results.get(rekey).getString("status"));
      assertEquals("succeeded", results.get(move).getString("status"));
      assertEquals("succeeded", results.get(drain).getString("status"));
      assertEquals("failed", results.get(drainUnknown).getString("status"));
      assertEquals("failed", results.get(unknownKind).getString("status"));
      assertEquals("unknown command kind", results.get(unknownKind).getString("detail"));
      String newKey = reported.getString("public_key");
      assertNotEquals(enrolledKey, newKey, "the heartbeat carrying the result carries the new key");
      assertEquals("nyc1", reported.getString("relay"));
      assertEquals(new JsonArray().add(new JsonObject().put("name", "web").put("state", "drained")), reported.getJsonArray("ingress"));
      JsonObject keyFile = new JsonObject(Files.readString(state.resolve("key.json")));
      assertEquals(newKey, keyFile.getString("public_key"), "saved before it was reported");
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state.resolve("key.json"))));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state.resolve("state.json"))));
      assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));

      // a restart while the coordinator still re-sends every command: nothing runs again, the same results are reported
      int before = fake.heartbeats(id).size();
      NodeAgent again = start(fake.url(), "cmd", state, Backoff.standard());
      try {
        Await.until("results reported after the restart", 10_000,
            () -> fake.heartbeats(id).stream().skip(before).anyMatch(s -> s.body().containsKey("command_results")));
        assertEquals(newKey, fake.heartbeats(id).get(before).body().getString("public_key"), "the saved key, from the first heartbeat on");
        JsonObject after = fake.heartbeats(id).stream().skip(before).filter(s -> s.body().containsKey("command_results")).findFirst().orElseThrow()
            .body();
        assertEquals(newKey, after.getString("public_key"), "not rekeyed again");
        assertEquals(results, results(after), "the stored results, reported again");
        assertEquals("nyc1", after.getString("relay"));
        assertEquals("drained", after.getJsonArray("ingress").getJsonObject(0).getString("state"));
        assertEquals(1, fake.all().stream().filter(s -> s.path().equals("/v1/nodes")).count(), "enrolled once");
        String metrics = http.get(again.listenPort(), "/metrics").bodyAsString();
        assertTrue(!metrics.contains("mesh_agent_commands_total{"), "nothing executed by the restarted agent:\n" + metrics);

        resend[0] = false; // the coordinator recorded the results: no longer reported
        int now = fake.heartbeats(id).size();
        Await.until("two more heartbeats", 10_000, () -> fake.heartbeats(id).size() >= now + 2);
        List<FakeCoordinator.Seen> hb = fake.heartbeats(id);
        assertTrue(!hb.get(hb.size() - 1).body().containsKey("command_results"), hb.get(hb.size() - 1).body().encode());
        assertEquals(newKey, new JsonObject(Files.readString(state.resolve("key.json"))).getString("public_key"));
      } finally {
        again.close();
      }
    }
  }

  static Map<String, JsonObject> results(JsonObject heartbeat) {
    return heartbeat.getJsonArray("command_results").stream().map(o -> (JsonObject) o)
        .collect(Collectors.toMap(r -> r.getString("id"), r -> r));
  }

  static String nodeId(NodeAgent agent) throws InterruptedException {
    Await.until("the enrollment", 10_000, () -> agent.verticle().session() != null && agent.verticle().session().isEnrolled());
    return agent.verticle().session().nodeId();
  }
}
