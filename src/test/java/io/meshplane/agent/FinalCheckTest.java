package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code simulate --final-check}'s verdict ({@link FinalCheck}) on a real replica's heartbeat answers: a
 * node that missed a policy change is counted behind (acl), one that holds the current versions is not.
 */
@Timeout(60)
class FinalCheckTest {
  static TestCluster cluster;
  static Meshplane replica;
  static String admin;
  static String enroll;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    replica = cluster.replica(0);
    admin = Tokens.admin(replica);
    enroll = Tokens.issue(replica, "fc", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void aNodeThatMissedAPolicyChangeIsBehindAndACurrentOneIsNot() {
    putPolicy("tcp/22");
    AgentSession current = enrolled("fc-current");
    AgentSession missed = enrolled("fc-missed");
    // both hold the first policy's rules (each the other's peer on tcp/22)
    for (AgentSession s : new AgentSession[] {current, missed}) {
      Await.until(s.nodeId() + " holds its first rules", () -> {
        s.apply(beat(s));
        return s.aclRuleCount() > 0;
      });
    }
    long held = missed.aclVersion();
    putPolicy("tcp/23");
    // only one of them hears of the change
    Await.until("the change reached " + current.nodeId(), () -> {
      current.apply(beat(current));
      return current.aclVersion() > held;
    });

    FinalCheck check = new FinalCheck();
    for (AgentSession s : new AgentSession[] {current, missed}) {
      long peers = s.peersVersion();
      long acl = s.aclVersion();
      check.answered(s.nodeId(), beat(s), peers, acl);
    }
    String line = check.summary(2, 5_000, true, 10, false);
    assertEquals(2, check.checked.sum(), line);
    assertEquals(1, check.current.sum(), line);
    assertEquals(1, check.behind.sum(), line);
    assertEquals(1, check.behindAcl.sum(), line);
    assertEquals(0, check.behindPeers.sum(), "the change left the peers as they were: " + line);
    assertTrue(line.contains("behind e.g. " + missed.nodeId() + " acl " + held + "<"), line);
    assertFalse(line.contains(current.nodeId()), line);
    assertFalse(check.passed(2), line);
  }

  @Test
  void aFullAnswerAtTheVersionHeldIsNotAMissedChange() {
    JsonObject unchanged = new JsonObject().put("peers", new JsonObject().put("version", 7).put("unchanged", true))
        .put("acl", new JsonObject().put("version", 9).put("unchanged", true));
    assertEquals(0, FinalCheck.behind(unchanged, 7, 9));
    // a node that holds nothing (version 0) gets the full set: behind only when its version is above 0
    JsonObject full = new JsonObject().put("peers", new JsonObject().put("version", 0).put("items", new JsonArray()))
        .put("acl", new JsonObject().put("version", 12).put("rules", new JsonArray()));
    assertEquals(FinalCheck.ACL, FinalCheck.behind(full, -1, 0));
    assertEquals(0, FinalCheck.behind(full, 0, 12));
    JsonObject delta = new JsonObject().put("peers", new JsonObject().put("version", 8).put("changed", new JsonArray()).put("removed", new JsonArray()))
        .put("acl", new JsonObject().put("version", 9).put("unchanged", true));
    assertEquals(FinalCheck.PEERS, FinalCheck.behind(delta, 7, 9));
  }

  /** A simulated node's session, enrolled as the simulator enrolls it. */
  private static AgentSession enrolled(String name) {
    NodeKey.Source keys = NodeKey.randomPublic(name.hashCode());
    AgentSession s = new AgentSession(name, keys.generate(), keys, true, null, System.currentTimeMillis());
    var r = cluster.http().sendRaw(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes", "application/json", s.enrollmentBody(List.of("tag:test")),
        enroll);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    assertTrue(s.enrolled(r.bodyAsJsonObject()), r.bodyAsString());
    return s;
  }

  /** One heartbeat of {@code s} with the versions it holds; its answer (not applied). */
  private static JsonObject beat(AgentSession s) {
    Buffer body = s.heartbeatBody(new StringBuilder(), System.currentTimeMillis());
    var r = cluster.http().sendRaw(HttpMethod.POST, replica.coordinatorPort(), "/v1" + s.heartbeatPath(), "application/json", body,
        s.authorization().substring("Bearer ".length()));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static void putPolicy(String port) {
    JsonObject grant = new JsonObject().put("src", new JsonArray().add("tag:test")).put("dst", new JsonArray().add("tag:test"))
        .put("ports", new JsonArray().add(port));
    var r = cluster.http().send(HttpMethod.PUT, replica.coordinatorPort(), "/v1/acl?team=fc&environment=prod", admin,
        new JsonObject().put("grants", new JsonArray().add(grant)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
