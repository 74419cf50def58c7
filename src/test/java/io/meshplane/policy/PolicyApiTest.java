package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The policy API as its users lean on it: tests that block a bad policy, previews, optimistic
 * locking under concurrency, history and rollback, hostile documents, relays, drift, and versions that
 * never go backwards while replicas are alternated during concurrent changes.
 */
@Timeout(300)
class PolicyApiTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"},"
      + "{\"name\":\"nyc1\",\"region\":\"us\",\"url\":\"https://nyc1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String acl(String team, String env) {
    return "/v1/acl?team=" + team + "&environment=" + env;
  }

  static JsonObject grant(String src, String dst, String... ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray(List.of(ports)));
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static HttpResponse<Buffer> put(Meshplane via, String team, JsonObject policy, String ifMatch) {
    var req = http.request(HttpMethod.PUT, via.coordinatorPort(), acl(team, "prod")).bearerTokenAuthentication(admin)
        .putHeader("Content-Type", "application/json");
    if (ifMatch != null) req.putHeader("If-Match", ifMatch);
    return http.send(req, policy.encode().getBytes());
  }

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
  void concurrentPutsWithTheSameIfMatchLetExactlyOneWin() {
    JsonObject p = new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "icmp")));
    assertEquals(200, put(a, "race", p, null).statusCode());
    List<Future<HttpResponse<Buffer>>> calls = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      JsonObject body = new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/" + (1000 + i))));
      var req = http.request(HttpMethod.PUT, (i % 2 == 0 ? a : b).coordinatorPort(), acl("race", "prod")).bearerTokenAuthentication(admin)
          .putHeader("Content-Type", "application/json").putHeader("If-Match", "\"1\"");
      calls.add(req.sendBuffer(Buffer.buffer(body.encode())));
    }
    int ok = 0;
    int conflict = 0;
    int limited = 0;
    for (Future<HttpResponse<Buffer>> f : calls) {
      HttpResponse<Buffer> r = Http.await(f, 30);
      if (r.statusCode() == 200) ok++;
      if (r.statusCode() == 409) {
        conflict++;
        assertEquals("conflict", r.bodyAsJsonObject().getString("code"));
      }
      if (r.statusCode() == 429 || r.statusCode() == 503) {
        // one caller's evaluations are bounded (policy.max_per_caller): the rest are told when to retry
        limited++;
        assertTrue(Integer.parseInt(r.getHeader("Retry-After")) > 0, r.bodyAsString());
      }
    }
    assertEquals(1, ok, "exactly one PUT with If-Match: 1 wins");
    assertEquals(7, conflict + limited, "every other PUT lost the race or was told to retry");
    assertEquals(2, http.get(a.coordinatorPort(), acl("race", "prod"), admin).bodyAsJsonObject().getLong("version"));
  }

  @Test
  void historyListsEveryVersionAndARollbackIsANewAuditedVersion() {
    JsonObject v1 = new JsonObject().put("grants", new JsonArray().add(grant("tag:a", "tag:b", "tcp/1")));
    JsonObject v2 = new JsonObject().put("grants", new JsonArray().add(grant("tag:a", "tag:b", "tcp/2")));
    assertEquals(200, put(a, "history", v1, "0").statusCode());
    assertEquals(200, put(a, "history", v2, "1").statusCode());
    HttpResponse<Buffer> r = http.send(http.request(HttpMethod.POST, b.coordinatorPort(), "/v1/acl/versions/1/restore?team=history&environment=prod")
        .bearerTokenAuthentication(admin).putHeader("If-Match", "2"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(3, r.bodyAsJsonObject().getLong("version"));
    assertEquals(1, r.bodyAsJsonObject().getLong("restored_from"));
    assertEquals(v1.getJsonArray("grants"), r.bodyAsJsonObject().getJsonArray("grants"));
    JsonObject page = http.get(a.coordinatorPort(), "/v1/acl/versions?team=history&environment=prod&limit=2", admin).bodyAsJsonObject();
    assertEquals(List.of(1L, 2L), page.getJsonArray("items").stream().map(o -> ((JsonObject) o).getLong("version")).toList());
    assertNotNull(page.getJsonArray("items").getJsonObject(0).getJsonObject("created_by").getString("id"));
    JsonObject next = http.get(a.coordinatorPort(), "/v1/acl/versions?team=history&environment=prod&limit=2&cursor="
        + page.getString("next_cursor"), admin).bodyAsJsonObject();
    assertEquals(3L, next.getJsonArray("items").getJsonObject(0).getLong("version"));
    assertEquals(2L, http.get(a.coordinatorPort(), "/v1/acl/versions/2?team=history&environment=prod", admin).bodyAsJsonObject()
        .getLong("version"));
    assertEquals(404, http.get(a.coordinatorPort(), "/v1/acl/versions/9?team=history&environment=prod", admin).statusCode());
    // the trail names the rollback with its versions
    JsonObject audit = http.get(a.coordinatorPort(), "/v1/audit?action=acl.rollback", admin).bodyAsJsonObject();
    JsonObject ev = audit.getJsonArray("items").getJsonObject(0);
    assertEquals(new JsonObject().put("old_version", 2).put("new_version", 3).put("restored_from", 1), ev.getJsonObject("details"));
    JsonObject update = http.get(a.coordinatorPort(), "/v1/audit?action=acl.update", admin).bodyAsJsonObject();
    assertTrue(update.getJsonArray("items").stream().anyMatch(o -> new JsonObject().put("old_version", 1).put("new_version", 2)
        .equals(((JsonObject) o).getJsonObject("details"))), update.encode());
  }

  @Test
  void hostilePolicyDocumentsAreRefusedNamingTheFieldAndNothingIsStored() {
    Map<String, JsonObject> cases = new java.util.LinkedHashMap<>();
    cases.put("/grants", new JsonObject());
    cases.put("/grants/0", new JsonObject().put("grants", new JsonArray().add("tag:a")));
    cases.put("/grants/0/src", new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("dst", new JsonArray().add("*"))
        .put("ports", new JsonArray().add("*")))));
    cases.put("/grants/0/src/0", new JsonObject().put("grants", new JsonArray().add(grant("group:eng", "*", "*"))));
    cases.put("/grants/0/dst/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "tag:Web", "*"))));
    cases.put("/grants/0/ports/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/70000"))));
    cases.put("/grants/0/ports/0 ", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/9-1"))));
    cases.put("/grants/0/ports/0  ", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "sctp/9"))));
    cases.put("/grants/0/src/0 ", new JsonObject().put("grants", new JsonArray().add(grant("10.1.2.3/8", "*", "*"))));
    // prefix lengths in ASCII digits only: fullwidth and Arabic-Indic digits are not /8
    cases.put("/grants/0/dst/0 ", new JsonObject().put("grants", new JsonArray().add(grant("*", "10.0.0.0/\uFF18", "*"))));
    cases.put("/grants/0/dst/0  ", new JsonObject().put("grants", new JsonArray().add(grant("*", "10.0.0.0/\u0668", "*"))));
    cases.put("/grants/1/ports/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "*")).add(grant("*", "*", "tcp/08"))));
    cases.put("/tests/0/accept/0", new JsonObject().put("grants", new JsonArray()).put("tests", new JsonArray()
        .add(new JsonObject().put("src", "a").put("accept", new JsonArray().add("b:tcp/1-2")))));
    JsonArray many = new JsonArray();
    for (int i = 0; i < 600; i++) many.add(grant("*", "*", "*"));
    cases.put("/grants  ", new JsonObject().put("grants", many));
    for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
      HttpResponse<Buffer> r = put(a, "hostile", c.getValue(), null);
      assertEquals(400, r.statusCode(), c.getKey() + ": " + r.bodyAsString());
      assertEquals(c.getKey().trim(), r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), r.bodyAsString());
    }
    // 10,000 grants: over the body limit before any parsing
    JsonArray huge = new JsonArray();
    for (int i = 0; i < 10_000; i++) huge.add(grant("*", "*", "*"));
    assertEquals(413, put(a, "hostile", new JsonObject().put("grants", huge), null).statusCode());
    // deep nesting
    String deep = "{\"grants\":" + "[".repeat(5000) + "]".repeat(5000) + "}";
    HttpResponse<Buffer> r = http.sendRaw(HttpMethod.PUT, a.coordinatorPort(), acl("hostile", "prod"), "application/json",
        Buffer.buffer(deep), admin);
    assertEquals(400, r.statusCode(), r.bodyAsString());
    // a bad If-Match
    assertEquals(400, put(a, "hostile", new JsonObject().put("grants", new JsonArray()), "W/\"1\"").statusCode());
    assertEquals(0, http.get(a.coordinatorPort(), acl("hostile", "prod"), admin).bodyAsJsonObject().getLong("version"), "nothing stored");
    // another team's policy does not exist for a token scoped elsewhere
    String other = io.meshplane.testing.Tokens.issue(a, "hostile", "prod", io.meshplane.access.Surface.ADMIN).jwt();
    assertEquals(404, http.get(a.coordinatorPort(), acl("tests", "prod"), other).statusCode());
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

  @Test
  void versionsNeverGoBackwardsAndNameOneContentAcrossReplicasDuringConcurrentChanges() throws Exception {
    List<Nodes.Enrolled> agents = new ArrayList<>();
    for (int i = 0; i < 6; i++) agents.add(enroll("c-" + i, "concurrent", i % 2 == 0 ? "tag:x" : "tag:y"));
    AtomicBoolean stop = new AtomicBoolean();
    Thread changer = new Thread(() -> {
      for (int i = 0; !stop.get() && i < 40; i++) {
        JsonObject p = new JsonObject().put("grants", new JsonArray().add(grant(i % 2 == 0 ? "tag:x" : "*", "tag:y", "tcp/" + (100 + i))));
        put(i % 2 == 0 ? a : b, "concurrent", p, null);
      }
    });
    changer.start();
    Map<String, long[]> held = new HashMap<>();
    Map<String, String> rulesByVersion = new HashMap<>();
    Map<String, String> fullByVersion = new HashMap<>();
    try {
      for (int round = 0; round < 60; round++) {
        for (int i = 0; i < agents.size(); i++) {
          Nodes.Enrolled n = agents.get(i);
          long[] v = held.computeIfAbsent(n.id(), k -> new long[] {0, 0});
          // every other beat asks for the full set, so full answers under one version can be compared
          long knownPeers = round % 2 == 0 ? 0 : v[0];
          JsonObject answer = beat((round + i) % 2 == 0 ? a : b, n, knownPeers, v[1]);
          JsonObject peers = answer.getJsonObject("peers");
          JsonObject aclBlock = answer.getJsonObject("acl");
          // an agent that says it holds nothing (known 0) may be given any version; one that names its version never an older one
          if (knownPeers > 0) {
            assertTrue(peers.getLong("version") >= v[0], n.name() + " peers went backwards: " + v[0] + " -> " + peers.encode());
          }
          assertTrue(aclBlock.getLong("version") >= v[1], n.name() + " acl went backwards: " + v[1] + " -> " + aclBlock.encode());
          v[0] = peers.getLong("version");
          v[1] = aclBlock.getLong("version");
          if (peers.containsKey("items")) {
            List<String> ids = new ArrayList<>();
            for (Object o : peers.getJsonArray("items")) ids.add(((JsonObject) o).getString("id"));
            java.util.Collections.sort(ids);
            String previous = fullByVersion.putIfAbsent(n.id() + "@" + peers.getLong("version"), ids.toString());
            if (previous != null) assertEquals(previous, ids.toString(), n.name() + ": one version, one peer set, on both replicas");
          }
          if (aclBlock.containsKey("rules")) {
            String previous = rulesByVersion.putIfAbsent(n.id() + "@" + aclBlock.getLong("version"), aclBlock.getJsonArray("rules").encode());
            if (previous != null) assertEquals(previous, aclBlock.getJsonArray("rules").encode(), n.name() + ": one version, one rule set");
          }
        }
      }
    } finally {
      stop.set(true);
      changer.join();
    }
    assertTrue(fullByVersion.size() > 6, "the test saw several versions: " + fullByVersion.size());
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, long peers, long acl) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("known", new JsonObject().put("peers", peers).put("acl", acl)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static List<String> names(JsonArray a) {
    List<String> out = new ArrayList<>();
    for (Object o : a) out.add(((JsonObject) o).getString("name"));
    return out;
  }
}
