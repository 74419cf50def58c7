package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Ids;
import io.meshplane.heartbeat.HeartbeatRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The protocol code both the agent and the simulator run, driven directly: answers in, heartbeat bodies and decisions out. */
class AgentSessionTest {
  final List<String> log = new ArrayList<>();
  final AgentSession.Events events = new AgentSession.Events() {
    @Override
    public void executed(CommandLedger.Result r) {
      log.add("executed " + r.id() + " " + r.kind() + " " + r.status());
    }

    @Override
    public void relayChanged(String from, String to, String why) {
      log.add("relay " + from + "->" + to);
    }

    @Override
    public void keyRotated(String publicKey) {
      log.add("rekey");
    }
  };

  AgentSession session(boolean simulated) {
    NodeKey.Source keys = simulated ? NodeKey.randomPublic(7) : NodeKey.x25519();
    AgentSession s = new AgentSession("web-1", keys.generate(), keys, simulated, events, System.currentTimeMillis());
    s.identify("nd_01jdabcdefghjkmnpqrstvwxyz", "100.64.0.7/32", "header.payload.signature");
    return s;
  }

  static JsonObject answer() {
    return new JsonObject().put("server_time", "2026-11-21T23:19:28.123Z").put("interval_s", 30).put("relay", "")
        .put("peers", new JsonObject().put("version", 0).put("items", new JsonArray()))
        .put("acl", new JsonObject().put("version", 0).put("rules", new JsonArray()))
        .put("ingress", new JsonArray()).put("commands", new JsonArray());
  }

  static JsonObject command(String id, String kind) {
    return new JsonObject().put("id", id).put("kind", kind);
  }

  static JsonObject withCommands(JsonObject... commands) {
    return answer().put("commands", new JsonArray(List.of((Object[]) commands)));
  }

  static JsonObject peer(String id, String name) {
    return new JsonObject().put("id", id).put("name", name).put("address", "100.64.0.9/32").put("public_key", NodeKey.randomPublic(1).generate().publicKey())
        .put("endpoints", new JsonArray()).put("relay", "").put("online", true);
  }

  /** The body as the coordinator reads it: parsed, and accepted by the coordinator's own strict validation. */
  static JsonObject body(AgentSession s) {
    JsonObject b = new JsonObject(s.heartbeatBody(new StringBuilder(), System.currentTimeMillis()));
    HeartbeatRequest.parse(b); // throws a Refusal naming the field when the coordinator would answer 400
    return b;
  }

  static Set<String> resultIds(JsonObject body) {
    JsonArray r = body.getJsonArray("command_results");
    if (r == null) return Set.of();
    return r.stream().map(o -> ((JsonObject) o).getString("id")).collect(Collectors.toSet());
  }

  @Test
  void theEnrollmentCarriesNameKeyAndTagsAndItsAnswerGivesTheIdentity() {
    NodeKey.Source keys = NodeKey.x25519();
    AgentSession s = new AgentSession("db-2", keys.generate(), keys, false, events, 0);
    JsonObject e = new JsonObject(s.enrollmentBody(List.of("tag:db", "tag:prod")));
    assertEquals("db-2", e.getString("name"));
    assertEquals(s.publicKey(), e.getString("public_key"));
    assertEquals(new JsonArray().add("tag:db").add("tag:prod"), e.getJsonArray("tags"));
    assertFalse(s.enrolled(new JsonObject().put("node", new JsonObject().put("id", "nd_x"))), "no credential: not enrolled");
    assertFalse(s.isEnrolled());
    assertTrue(s.enrolled(new JsonObject().put("node", new JsonObject().put("id", "nd_x").put("address", "100.64.0.2/32"))
        .put("credential", new JsonObject().put("token", "a.b.c").put("expires", "2027-01-01T00:00:00.000Z"))));
    assertEquals("nd_x", s.nodeId());
    assertEquals("Bearer a.b.c", s.authorization());
    assertEquals("/nodes/nd_x/heartbeat", s.heartbeatPath());
  }

  @Test
  void anX25519PublicKeyIsTheRaw32BytesOfTheJdkKey() {
    NodeKey k = NodeKey.x25519().generate();
    assertTrue(NodeKey.wellFormedPublic(k.publicKey()));
    assertTrue(k.privateKey().length > 32, "PKCS#8 encoding");
    assertNotEquals(k.publicKey(), NodeKey.x25519().generate().publicKey());
    assertTrue(NodeKey.wellFormedPublic(NodeKey.randomPublic(3).generate().publicKey()));
  }

  @Test
  void theFirstHeartbeatCarriesWhatTheNodeHoldsAndNothingItDoesNot() {
    AgentSession s = session(false);
    JsonObject b = body(s);
    assertEquals(s.publicKey(), b.getString("public_key"));
    assertFalse(b.containsKey("relay"), "no relay before one is assigned");
    assertFalse(b.containsKey("known"), "no versions held yet");
    assertFalse(b.containsKey("ingress"));
    assertFalse(b.containsKey("services"));
    assertFalse(b.containsKey("command_results"));
    assertEquals(AgentSession.AGENT_VERSION, b.getJsonObject("telemetry").getString("agent_version"));
    assertFalse(b.getJsonObject("telemetry").containsKey("simulated"));
    assertTrue(body(session(true)).getJsonObject("telemetry").getBoolean("simulated"));
  }

  @Test
  void theFirstAnswerAssignsTheRelayWhenNoneIsHeldAndLaterAnswersNeverMoveIt() {
    AgentSession s = session(false);
    s.apply(answer().put("relay", "fra1"));
    assertEquals("fra1", s.relay());
    assertEquals("fra1", body(s).getString("relay"));
    s.apply(answer().put("relay", "ams1"));
    assertEquals("fra1", s.relay(), "only move_relay changes the relay once assigned");
    assertEquals(List.of("relay null->fra1"), log);

    AgentSession restarted = session(false);
    restarted.restore(new JsonObject().put("relay", "nyc1"));
    restarted.apply(answer().put("relay", "fra1"));
    assertEquals("nyc1", restarted.relay(), "a relay held from before a restart is kept");
  }

  @Test
  void peersComeFromFullAnswersAndDeltasAndTheHeldVersionsAreReportedAsKnown() {
    AgentSession s = session(false);
    s.apply(answer().put("peers", new JsonObject().put("version", 3).put("items", new JsonArray().add(peer("nd_a", "a")).add(peer("nd_b", "b"))))
        .put("acl", new JsonObject().put("version", 7).put("rules", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("100.64.0.9/32"))
            .put("ports", new JsonArray().add("tcp/5432"))))));
    assertEquals(2, s.peerCount());
    assertEquals(3, s.peersVersion());
    assertEquals(7, s.aclVersion());
    assertEquals(1, s.aclRuleCount());
    assertEquals(new JsonObject().put("peers", 3).put("acl", 7), body(s).getJsonObject("known"));

    int received = s.apply(answer().put("peers", new JsonObject().put("version", 5)
            .put("changed", new JsonArray().add(peer("nd_c", "c")).add(peer("nd_b", "b-renamed"))).put("removed", new JsonArray().add("nd_a")))
        .put("acl", new JsonObject().put("version", 7).put("unchanged", true)));
    assertEquals(2, received);
    assertEquals(2, s.peerCount());
    assertTrue(s.peers().contains("nd_b") && s.peers().contains("nd_c") && !s.peers().contains("nd_a"));
    assertTrue(s.peers().entries().stream().anyMatch(p -> p.getString("name").equals("b-renamed")), "a changed entry replaces by id");
    assertEquals(1, s.aclRuleCount(), "unchanged keeps the rules");

    // a replica behind answers "unchanged" under a lower version: the node keeps what it holds
    s.apply(answer().put("peers", new JsonObject().put("version", 4).put("unchanged", true)).put("acl", new JsonObject().put("version", 6).put("unchanged", true)));
    assertEquals(new JsonObject().put("peers", 5).put("acl", 7), body(s).getJsonObject("known"));

    AgentSession sim = session(true);
    sim.apply(answer().put("peers", new JsonObject().put("version", 2).put("items", new JsonArray().add(peer("nd_a", "a")))));
    assertEquals(1, sim.peerCount());
    assertEquals(List.of(), sim.peers().entries(), "a simulated node keeps ids only");
  }

  @Test
  void rekeyMakesANewKeyReportedFromTheNextHeartbeatOn() {
    AgentSession s = session(false);
    String before = s.publicKey();
    s.takeDirty();
    String op = Ids.next("op");
    s.apply(withCommands(command(op, "rekey")));
    assertNotEquals(before, s.publicKey());
    assertTrue(NodeKey.wellFormedPublic(s.publicKey()));
    assertTrue((s.takeDirty() & AgentSession.DIRTY_KEY) != 0, "the new key is to be saved before the next heartbeat");
    JsonObject b = body(s);
    assertEquals(s.publicKey(), b.getString("public_key"));
    JsonObject result = b.getJsonArray("command_results").getJsonObject(0);
    assertEquals(op, result.getString("id"));
    assertEquals("succeeded", result.getString("status"));
  }

  @Test
  void aCommandSeenAgainIsNotExecutedAgainAndItsStoredResultIsReportedAgain() {
    AgentSession s = session(false);
    String op = Ids.next("op");
    s.apply(withCommands(command(op, "rekey")));
    String key = s.publicKey();
    JsonObject first = body(s).getJsonArray("command_results").getJsonObject(0);

    s.apply(answer()); // the coordinator recorded the result: the command is gone
    assertFalse(body(s).containsKey("command_results"), "no longer reported once it no longer appears");

    s.apply(withCommands(command(op, "rekey"))); // re-sent (a replica crashed before it recorded the result)
    assertEquals(key, s.publicKey(), "not executed again");
    assertEquals(first, body(s).getJsonArray("command_results").getJsonObject(0), "the stored result, again");
    s.apply(withCommands(command(op, "rekey")));
    assertEquals(first, body(s).getJsonArray("command_results").getJsonObject(0), "reported while it keeps appearing");
    assertEquals(1, log.stream().filter(l -> l.startsWith("executed")).count());
  }

  @Test
  void theLedgerSurvivesARestartThroughTheStateFile() {
    AgentSession s = session(false);
    String op = Ids.next("op");
    s.apply(withCommands(command(op, "move_relay").put("relay", "nyc1")));
    JsonObject state = s.persistentState();

    AgentSession restarted = session(false);
    restarted.restore(new JsonObject(state.encode()));
    assertEquals("nyc1", restarted.relay());
    restarted.apply(withCommands(command(op, "move_relay").put("relay", "ams1")));
    assertEquals("nyc1", restarted.relay(), "a command executed before the restart is not executed again");
    assertEquals(Set.of(op), resultIds(body(restarted)));
  }

  @Test
  void theLedgerKeepsTheLast256Commands() {
    CommandLedger l = new CommandLedger();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      String id = Ids.next("op");
      ids.add(id);
      l.put(new CommandLedger.Result(id, "rekey", "succeeded", null));
    }
    assertEquals(256, l.size());
    assertNull(l.get(ids.get(0)));
    assertTrue(l.get(ids.get(299)) != null && l.get(ids.get(44)) != null);
    assertEquals(256, CommandLedger.fromJson(l.toJson()).size());
  }

  @Test
  void moveRelayChangesTheReportedRelayAndNeedsARelayName() {
    AgentSession s = session(false);
    s.apply(answer().put("relay", "fra1"));
    String op = Ids.next("op");
    s.apply(withCommands(command(op, "move_relay").put("relay", "nyc1")));
    assertEquals("nyc1", s.relay());
    JsonObject b = body(s);
    assertEquals("nyc1", b.getString("relay"));
    assertEquals("succeeded", b.getJsonArray("command_results").getJsonObject(0).getString("status"));
    assertTrue(log.contains("relay fra1->nyc1"));

    String bad = Ids.next("op");
    s.apply(withCommands(command(bad, "move_relay")));
    assertEquals("nyc1", s.relay());
    assertEquals("failed", s.executed(bad).status());
  }

  /** A service whose port has a leading zero or non-ASCII digits is no service: the agent keeps the valid ones, as the coordinator would. */
  @Test
  void servicesWithALeadingZeroOrNonAsciiDigitsAreDropped() {
    AgentSession s = session(false);
    s.apply(answer().put("services", new JsonArray().add("ssh:22").add("ssh:022").add("web:\uff18\uff10").add("db:+5432").add("dns:0")));
    assertEquals(new JsonArray().add("ssh:22"), body(s).getJsonArray("services"));
  }

  @Test
  void drainIngressReportsItDrainedAndAnUnknownIngressFails() {
    AgentSession s = session(false);
    JsonArray ingress = new JsonArray().add(new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443).put("state", "active"))
        .add(new JsonObject().put("name", "api").put("hostname", "api.example.net").put("port", 443).put("state", "drained"));
    s.apply(answer().put("ingress", ingress).put("services", new JsonArray().add("ssh:22").add("not a service")));
    JsonObject b = body(s);
    assertEquals(new JsonArray().add(new JsonObject().put("name", "web").put("state", "active")).add(new JsonObject().put("name", "api").put("state", "drained")),
        b.getJsonArray("ingress"), "active until drained; drained when the coordinator says so");
    assertEquals(new JsonArray().add("ssh:22"), b.getJsonArray("services"), "the bound services, as answered (valid ones)");

    String unknown = Ids.next("op");
    String drain = Ids.next("op");
    s.apply(answer().put("ingress", ingress).put("commands", new JsonArray().add(command(unknown, "drain_ingress").put("name", "mail"))
        .add(command(drain, "drain_ingress").put("name", "web"))));
    assertEquals("failed", s.executed(unknown).status());
    assertTrue(s.executed(unknown).detail().contains("mail"));
    assertEquals("succeeded", s.executed(drain).status());
    b = body(s);
    assertEquals("drained", b.getJsonArray("ingress").getJsonObject(0).getString("state"));
    assertEquals(Set.of(unknown, drain), resultIds(b));
    assertEquals(new JsonArray().add("web"), s.persistentState().getJsonArray("drained"));
  }

  @Test
  void anUnknownKindFailsAndAMalformedIdIsNeverExecuted() {
    AgentSession s = session(false);
    String op = Ids.next("op");
    s.apply(withCommands(command(op, "reboot"), command("not-an-op", "rekey")));
    String key = s.publicKey();
    assertEquals("failed", s.executed(op).status());
    assertEquals("unknown command kind", s.executed(op).detail());
    assertEquals(Set.of(op), resultIds(body(s)), "a result the coordinator would refuse is never sent");
    assertSame(key, s.publicKey());
  }

  @Test
  void failuresFailOverFirstThenBackOffAndRejectionsDoNotFailOver() {
    AgentSession s = session(false);
    Backoff b = new Backoff(1000, () -> 1.0);
    Reply refused = Reply.failure(new java.net.ConnectException("Connection refused"));
    assertEquals(0, s.afterFailure(refused, b, 3, 0), "the next coordinator at once");
    assertEquals(1, s.coordinator());
    assertEquals(0, s.afterFailure(new Reply(502, null, "http_502", null, 0, 0), b, 3, 0));
    assertEquals(2, s.coordinator());
    assertEquals(1000, s.afterFailure(new Reply(503, null, "http_503", null, 0, 0), b, 3, 0), "every one failed: back off");
    assertEquals(0, s.coordinator());
    assertEquals(1, s.failures());
    s.afterFailure(refused, b, 3, 0);
    s.afterFailure(refused, b, 3, 0);
    assertEquals(2000, s.afterFailure(refused, b, 3, 0), "doubling");

    AgentSession r = session(false);
    Reply revoked = new Reply(401, new JsonObject().put("code", "token_revoked"), "http_401", null, 0, 0);
    long wait = 0;
    for (int i = 0; i < 20; i++) {
      wait = r.afterFailure(revoked, b, 3, 0);
      assertEquals(0, r.coordinator(), "a rejection is not the coordinator's fault");
    }
    assertEquals(60_000, wait, "capped at max(interval, 60 s)");

    AgentSession busy = session(false);
    assertEquals(7000, busy.afterFailure(new Reply(429, null, "http_429", null, 7000, 0), new Backoff(1000, () -> 0.0), 2, 0), "Retry-After is honoured");
    assertEquals(0, busy.coordinator(), "rate limits are cluster-wide: no failover");

    assertEquals(30_000, s.afterSuccess(new Backoff(1000, () -> 0.5), 0), "the interval after a success");
    assertEquals(0, s.failures());
  }

  @Test
  void aResultGoesOutSoonAfterACommandRunsNotAnIntervalLater() {
    AgentSession s = session(true);
    Backoff middle = new Backoff(1000, () -> 0.5);
    String op = io.meshplane.common.Ids.next("op");
    s.apply(withCommands(command(op, "rekey")));
    assertEquals(1000, s.afterSuccess(middle, 0), "the result (and the new key) within a second");
    s.apply(withCommands(command(op, "rekey")));
    assertEquals(30_000, s.afterSuccess(middle, 0), "a command seen again runs nothing: back to the interval");
    s.apply(withCommands(command(io.meshplane.common.Ids.next("op"), "rekey")));
    assertEquals(500, s.afterSuccess(middle, 500), "never later than the interval in force");
  }

  @Test
  void theBackoffGrowsWithinItsEnvelopeAndNeverBelowHalfTheBase() {
    Backoff b = Backoff.standard();
    for (int n = 1; n <= 12; n++) {
      long envelope = b.envelopeMs(n, 30_000);
      assertEquals(Math.min(60_000, 1000L << (n - 1)), envelope);
      for (int i = 0; i < 200; i++) {
        long d = b.delayMs(n, 30_000);
        assertTrue(d >= 500 && d <= envelope, n + ": " + d);
      }
    }
    assertEquals(300_000, b.envelopeMs(50, 300_000), "the cap follows a longer interval");
    for (int i = 0; i < 200; i++) {
      long d = b.intervalMs(30_000);
      assertTrue(d >= 27_000 && d <= 33_000, "±10 %: " + d);
    }
  }
}
