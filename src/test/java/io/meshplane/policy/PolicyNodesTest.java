package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The policy as it meets the nodes: its tests that block a bad policy, previews of the peers a node
 * would gain and lose, relays assigned at enrollment, drift, and when a node acknowledged a change.
 */
@Timeout(300)
class PolicyNodesTest extends PolicyCluster {

  @Test
  void aFailingPolicyTestBlocksThePutAndChangesNothing() {
    enroll("web-1", "tests", "tag:web");
    enroll("db-1", "tests", "tag:db");
    JsonObject good = new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432")))
        .put("tests", new JsonArray().add(new JsonObject().put("src", "web-1").put("accept", new JsonArray().add("db-1:tcp/5432"))
            .put("deny", new JsonArray().add("db-1:tcp/22"))));
    HttpResponse<Buffer> r = put(a, "tests", good, null);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals("\"1\"", r.getHeader("ETag"));

    JsonObject bad = new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/*")))
        .put("tests", good.getJsonArray("tests"));
    r = put(b, "tests", bad, null);
    assertEquals(400, r.statusCode(), r.bodyAsString());
    JsonObject problem = r.bodyAsJsonObject();
    assertEquals("invalid_request", problem.getString("code"));
    assertEquals("/tests/0/deny/0", problem.getJsonArray("errors").getJsonObject(0).getString("field"));
    assertTrue(problem.getJsonArray("errors").getJsonObject(0).getString("message").contains("web-1 can reach db-1 on tcp/22"),
        problem.encode());
    JsonObject now = http.get(b.coordinatorPort(), acl("tests", "prod"), admin).bodyAsJsonObject();
    assertEquals(1, now.getLong("version"), "nothing was stored");
    assertEquals(new JsonArray().add("tcp/5432"), now.getJsonArray("grants").getJsonObject(0).getJsonArray("ports"));
    // a test naming no node fails too: a typo in a test must not pass silently
    JsonObject typo = good.copy().put("tests", new JsonArray().add(new JsonObject().put("src", "web-9").put("accept",
        new JsonArray().add("db-1:tcp/5432"))));
    r = put(a, "tests", typo, null);
    assertEquals(400, r.statusCode());
    assertEquals("/tests/0/src", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
  }

  @Test
  void previewShowsGrantsAndThePeersANodeWouldGainAndLoseWithoutSaving() {
    enroll("pv-web", "preview", "tag:web");
    Nodes.Enrolled db = enroll("pv-db", "preview", "tag:db");
    enroll("pv-mon", "preview", "tag:mon");
    assertEquals(200, put(a, "preview", new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432"))), null)
        .statusCode());
    JsonObject candidate = new JsonObject().put("grants", new JsonArray().add(grant("tag:mon", "*", "tcp/9100")));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, b.coordinatorPort(), "/v1/acl/preview?team=preview&environment=prod", admin,
        new JsonObject().put("policy", candidate).put("node", db.id()));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    JsonObject p = r.bodyAsJsonObject();
    assertEquals(new JsonArray().add("grant 0: tag:mon -> * tcp/9100 (destination)"), p.getJsonArray("acl_matches"));
    assertEquals(List.of("pv-mon"), names(p.getJsonObject("peers").getJsonArray("gained")));
    assertEquals(List.of("pv-web"), names(p.getJsonObject("peers").getJsonArray("lost")));
    r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/preview?team=preview&environment=prod", admin,
        new JsonObject().put("policy", candidate).put("src", "pv-web").put("dst", "pv-db").put("port", "tcp/5432"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(false, r.bodyAsJsonObject().getBoolean("allowed"));
    assertEquals(true, r.bodyAsJsonObject().getBoolean("allowed_now"));
    assertEquals(new JsonObject().put("run", 0).put("passed", true).put("failures", new JsonArray()), r.bodyAsJsonObject().getJsonObject("tests"));
    // the candidate's own tests run in the preview, before saving: one passing, one failing probe
    JsonObject tested = candidate.copy().put("tests", new JsonArray().add(new JsonObject().put("src", "pv-mon")
        .put("accept", new JsonArray().add("pv-db:tcp/9100")).put("deny", new JsonArray().add("pv-web:tcp/9100"))));
    r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/preview?team=preview&environment=prod", admin,
        new JsonObject().put("policy", tested).put("node", "pv-db"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    JsonObject results = r.bodyAsJsonObject().getJsonObject("tests");
    assertEquals(1, results.getInteger("run"), results.encode());
    assertEquals(false, results.getBoolean("passed"), results.encode());
    assertEquals(1, results.getJsonArray("failures").size(), results.encode());
    assertEquals("/tests/0/deny/0", results.getJsonArray("failures").getJsonObject(0).getString("field"), results.encode());
    assertEquals(1, http.get(a.coordinatorPort(), acl("preview", "prod"), admin).bodyAsJsonObject().getLong("version"), "nothing saved");
    // a PUT of it is refused with the same failure
    HttpResponse<Buffer> refused = put(a, "preview", tested, null);
    assertEquals(400, refused.statusCode(), refused.bodyAsString());
    assertEquals("/tests/0/deny/0", refused.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    // a bad candidate is named under /policy
    r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/preview?team=preview&environment=prod", admin,
        new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/0")))).put("node", "pv-db"));
    assertEquals(400, r.statusCode());
    assertEquals("/policy/grants/0/ports/0", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    for (String[] bad : new String[][] {{"pv-web", "tag:DB", "tcp/5432", "/dst"}, {"PV", "pv-db", "tcp/5432", "/src"},
        {"pv-web", "pv-db", "tcp/99999", "/port"}, {"pv-web", "pv-db", "sctp/1", "/port"}}) {
      r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/preview?team=preview&environment=prod", admin,
          new JsonObject().put("policy", candidate).put("src", bad[0]).put("dst", bad[1]).put("port", bad[2]));
      assertEquals(400, r.statusCode(), r.bodyAsString());
      assertEquals(bad[3], r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), r.bodyAsString());
    }
  }

  @Test
  void enrollmentAssignsTheLeastLoadedRelayOfTheRegionAndRelaysCountTheirNodes() {
    JsonObject body = new JsonObject().put("name", "r-1").put("public_key", Nodes.key()).put("team", "relays").put("environment", "prod")
        .put("region", "eu");
    List<String> assigned = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin,
          body.copy().put("name", "r-" + i).put("public_key", Nodes.key()));
      assertEquals(201, r.statusCode(), r.bodyAsString());
      assigned.add(r.bodyAsJsonObject().getJsonObject("node").getString("relay"));
    }
    assertEquals(2, assigned.stream().filter("fra1"::equals).count(), assigned.toString());
    assertEquals(2, assigned.stream().filter("ams1"::equals).count(), assigned.toString());
    HttpResponse<Buffer> us = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body.copy().put("name", "r-us").put("region", "us").put("public_key", Nodes.key()));
    assertEquals("nyc1", us.bodyAsJsonObject().getJsonObject("node").getString("relay"));
    HttpResponse<Buffer> nowhere = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body.copy().put("name", "r-x").put("region", "mars"));
    assertEquals(400, nowhere.statusCode());
    assertEquals("region", nowhere.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    String scoped = io.meshplane.testing.Tokens.issue(a, "relays", "prod", io.meshplane.access.Surface.MONITORING).jwt();
    JsonArray relays = http.get(b.coordinatorPort(), "/v1/relays", scoped).bodyAsJsonObject().getJsonArray("items");
    Map<String, Long> counts = new HashMap<>();
    for (Object o : relays) counts.put(((JsonObject) o).getString("name"), ((JsonObject) o).getLong("nodes"));
    assertEquals(Map.of("fra1", 2L, "ams1", 2L, "nyc1", 1L), counts);
    // the heartbeat answer's relay is the assignment
    Nodes.Enrolled n = new Nodes.Enrolled(us.bodyAsJsonObject().getJsonObject("node").getString("id"), "r-us",
        us.bodyAsJsonObject().getJsonObject("credential").getString("token"), null);
    JsonObject answer = http.send(HttpMethod.POST, b.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), new JsonObject())
        .bodyAsJsonObject();
    assertEquals("nyc1", answer.getString("relay"));
  }

  @Test
  void aNodeThatKeepsAcknowledgingOldRulesRaisesOnePolicyDriftEvent() throws Exception {
    Nodes.Enrolled web = enroll("drift-web", "drift", "tag:web");
    enroll("drift-db", "drift", "tag:db");
    assertEquals(200, put(a, "drift", new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432"))), null)
        .statusCode());
    JsonObject first = beat(a, web, 0, 0);
    long acl = first.getJsonObject("acl").getLong("version");
    // the agent never applies the new rules: it keeps acknowledging version 0 (always the same replica)
    for (int i = 0; i < 5; i++) beat(a, web, 0, 0);
    JsonArray events = awaitDriftEvents(web, 1);
    assertEquals(1, events.size(), events.encode());
    JsonObject record = http.get(a.coordinatorPort(), "/v1/nodes/" + web.id(), admin).bodyAsJsonObject();
    JsonObject sync = record.getJsonObject("policy_sync");
    assertEquals("behind", sync.getString("state"), sync.encode());
    assertEquals(0, sync.getJsonObject("acknowledged").getLong("acl"));
    assertEquals(acl, sync.getJsonObject("current").getLong("acl"));
    // counted in mesh_node_policy_drift (each replica counts the claims it owns: the sum is the fleet's)
    assertEquals(1, awaitDriftGauge(1), "mesh_node_policy_drift summed over the replicas");
    // once it acknowledges, it is current again: through the OTHER replica, which did not see the drift begin
    beat(b, web, first.getJsonObject("peers").getLong("version"), acl);
    record = http.get(b.coordinatorPort(), "/v1/nodes/" + web.id(), admin).bodyAsJsonObject();
    assertEquals("current", record.getJsonObject("policy_sync").getString("state"));
    assertEquals(0, awaitDriftGauge(0), "the drift ended on every replica");
    // a later drift of the same node is a new event (the claim was lifted)
    for (int i = 0; i < 5; i++) beat(a, web, 0, 0);
    events = awaitDriftEvents(web, 2);
    assertEquals(2, events.size(), events.encode());
  }

  private static JsonArray awaitDriftEvents(Nodes.Enrolled n, int atLeast) {
    return Await.until(atLeast + " policy drift events of " + n.name(), 10_000,
        () -> http.get(b.coordinatorPort(), "/v1/events?type=node.policy_drift&node_id=" + n.id(), admin).bodyAsJsonObject()
            .getJsonArray("items"), events -> events.size() >= atLeast);
  }

  /**
   * {@code policy_sync.acknowledged_at} is when the node's heartbeat first acknowledged what it holds:
   * it stays while later heartbeats repeat the same versions, moves to the heartbeat that acknowledges
   * a policy change, reads the same on both replicas, and comes from PostgreSQL once flushed (the row,
   * not only the live entry, holds it: a node without a live entry still shows it). The write-behind
   * coalesces a node's heartbeats per flush interval, so the test lets each acknowledgment be written
   * before the next heartbeat, as agents beating every 30 s against a 1 s flush always do.
   */
  @Test
  void theRecordShowsWhenTheNodeFirstAcknowledgedThePolicyChange() throws Exception {
    Nodes.Enrolled web = enroll("ack-web", "ack", "tag:web");
    enroll("ack-db", "ack", "tag:db");
    JsonObject record = http.get(a.coordinatorPort(), "/v1/nodes/" + web.id(), admin).bodyAsJsonObject();
    assertNull(record.getJsonObject("policy_sync").getValue("acknowledged_at"), "nothing acknowledged before the first heartbeat");

    JsonObject first = beat(a, web, 0, 0);
    long[] v = {first.getJsonObject("peers").getLong("version"), first.getJsonObject("acl").getLong("version")};
    JsonObject applied = beat(b, web, v[0], v[1]); // the agent applied the answer: its first acknowledgment of v
    String ackedAt = applied.getString("server_time");
    assertEquals(v[0] + "/" + v[1] + "/" + java.time.Instant.parse(ackedAt), awaitStored(web, v[0] + "/" + v[1] + "/" + java.time.Instant.parse(ackedAt)));
    for (int i = 0; i < 3; i++) beat(i % 2 == 0 ? a : b, web, v[0], v[1]); // the same versions again: not a new acknowledgment
    for (Meshplane m : List.of(a, b)) assertEquals(ackedAt, awaitAcknowledgedAt(m, web, ackedAt), "replica " + m.coordinatorPort());

    // a policy change (web may now reach db: web gains a peer, its inbound rules stay) is carried by a
    // new version; until the agent applies it, acknowledged_at stays
    assertEquals(200, put(a, "ack", new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432"))), null)
        .statusCode());
    JsonObject told = beat(a, web, v[0], v[1]);
    long newAcl = told.getJsonObject("acl").getLong("version");
    long newPeers = told.getJsonObject("peers").getLong("version");
    assertTrue(newPeers > v[0], told.encode());
    JsonObject sync = http.get(b.coordinatorPort(), "/v1/nodes/" + web.id(), admin).bodyAsJsonObject().getJsonObject("policy_sync");
    assertEquals("behind", sync.getString("state"), sync.encode());
    assertEquals(ackedAt, awaitAcknowledgedAt(b, web, ackedAt));
    JsonObject confirmed = beat(b, web, newPeers, newAcl);
    String changeAckedAt = confirmed.getString("server_time");
    // in PostgreSQL (the write-behind stamped it; flush interval 100 ms): what a full-cluster restart keeps
    String want = newPeers + "/" + newAcl + "/" + java.time.Instant.parse(changeAckedAt);
    assertEquals(want, awaitStored(web, want));
    beat(a, web, newPeers, newAcl);
    for (Meshplane m : List.of(a, b)) {
      assertEquals(changeAckedAt, awaitAcknowledgedAt(m, web, changeAckedAt), "replica " + m.coordinatorPort());
      sync = http.get(m.coordinatorPort(), "/v1/nodes/" + web.id(), admin).bodyAsJsonObject().getJsonObject("policy_sync");
      assertEquals("current", sync.getString("state"), sync.encode());
    }
    assertEquals(want, awaitStored(web, want), "later heartbeats with the same versions keep the stamp");
  }

  /** The row's "acknowledged_peers/acknowledged_acl/acknowledged_at" once it equals {@code want} (within 10 s), else its last value. */
  private static String awaitStored(Nodes.Enrolled n, String want) {
    return Await.until("the row acknowledges " + want, 10_000, () -> {
      try (var conn = cluster.db().connect(); var st = conn.createStatement();
           var rs = st.executeQuery("SELECT acknowledged_peers, acknowledged_acl, acknowledged_at FROM nodes WHERE id = '" + n.id() + "'")) {
        rs.next();
        return rs.getLong(1) + "/" + rs.getLong(2) + "/" + (rs.getTimestamp(3) == null ? null : rs.getTimestamp(3).toInstant());
      }
    }, want::equals);
  }

  /** The node record's policy_sync.acknowledged_at on {@code via} once it equals {@code want} (the heartbeat's write is visible at once; within 5 s), else its last value. */
  private static String awaitAcknowledgedAt(Meshplane via, Nodes.Enrolled n, String want) {
    return Await.until("acknowledged_at " + want + " on " + via.coordinatorPort(), 5_000,
        () -> http.get(via.coordinatorPort(), "/v1/nodes/" + n.id(), admin).bodyAsJsonObject().getJsonObject("policy_sync")
            .getString("acknowledged_at"), want::equals);
  }

  /** The sum of mesh_node_policy_drift over both replicas once it equals {@code want} (each refreshes every 5 s), or the last sum after 15 s. */
  private long awaitDriftGauge(long want) {
    return Await.until("mesh_node_policy_drift summed over the replicas is " + want, 15_000, () -> {
      long sum = 0;
      for (Meshplane m : List.of(a, b)) sum += (long) Metrics.value(http, m.coordinatorPort(), "mesh_node_policy_drift");
      return sum;
    }, sum -> sum == want);
  }
}
