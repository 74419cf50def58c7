package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.auth.TokenIssuer;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Enrollment, inventory, heartbeat and write-behind across two real replicas. */
@Timeout(240)
class NodeLifecycleTest {
  /** Long enough that a burst of 200 heartbeats surely fits in one interval even on a busy 2-core machine. */
  static final long FLUSH_MS = 2000;
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String root;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.started(2, Map.of("writebehind.flush_interval", FLUSH_MS + "ms"));
    db = cluster.db();
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    root = cluster.admin();
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      // counts every row write the write-behind makes (test schema only)
      st.execute("CREATE TABLE test_node_writes (node_id text, at timestamptz DEFAULT clock_timestamp())");
      st.execute("CREATE FUNCTION test_count_write() RETURNS trigger AS $$ BEGIN "
          + "INSERT INTO test_node_writes (node_id) VALUES (NEW.id); RETURN NEW; END $$ LANGUAGE plpgsql");
      st.execute("CREATE TRIGGER test_count_write AFTER UPDATE ON nodes FOR EACH ROW EXECUTE FUNCTION test_count_write()");
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static HttpResponse<Buffer> beat(Meshplane on, Nodes.Enrolled n, JsonObject body) {
    return http.send(HttpMethod.POST, on.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
  }

  static JsonObject problem(HttpResponse<Buffer> r, int status, String code) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
    assertEquals(code, r.bodyAsJsonObject().getString("code"), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static long scalar(String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void enrollmentGivesAUniqueAddressAndAnAgentCredentialForThatNodeOnly() {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "enroll-1", "web", "prod");
    JsonObject node = n.node();
    assertTrue(node.getString("address").matches("100\\.(6[4-9]|[7-9]\\d|1[01]\\d|12[0-7])\\.\\d+\\.\\d+/32"), node.getString("address"));
    for (String field : new String[] {"endpoints", "tags", "routes", "services", "ingress", "acl_matches"}) {
      assertTrue(node.getValue(field) instanceof JsonArray, field);
    }
    assertEquals("pending", node.getString("status"));
    assertNull(node.getValue("heartbeat"));
    JsonObject me = http.get(a.coordinatorPort(), "/v1/auth/whoami", n.token()).bodyAsJsonObject();
    assertEquals("agent", me.getJsonObject("scope").getString("surface"));
    assertEquals(n.id(), me.getString("node_id"));
    assertEquals(List.of("heartbeat"), me.getJsonArray("permissions").getList());
    problem(http.get(a.coordinatorPort(), "/v1/nodes", n.token()), 403, "forbidden");
    problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", root,
        new JsonObject().put("name", "enroll-1").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod")), 409, "conflict");
  }

  @Test
  void concurrentEnrollmentsOnBothReplicasGetDistinctAddresses() {
    List<Future<HttpResponse<Buffer>>> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      Meshplane on = i % 2 == 0 ? a : b;
      all.add(http.sendAsync(HttpMethod.POST, on.coordinatorPort(), "/v1/nodes", root,
          new JsonObject().put("name", "conc-" + i).put("public_key", Nodes.key()).put("team", "conc").put("environment", "prod")));
    }
    Set<String> addresses = new HashSet<>();
    for (Future<HttpResponse<Buffer>> f : all) {
      HttpResponse<Buffer> r = Http.await(f, 30);
      assertEquals(201, r.statusCode(), r.bodyAsString());
      addresses.add(r.bodyAsJsonObject().getJsonObject("node").getString("address"));
    }
    assertEquals(40, addresses.size());
  }

  @Test
  void aHeartbeatOnOneReplicaShowsOnTheOtherAtOnce() {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "hb-1", "web", "prod");
    HttpResponse<Buffer> r = beat(a, n, Nodes.beat(7));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    JsonObject resp = r.bodyAsJsonObject();
    assertEquals(30, resp.getInteger("interval_s"));
    // known 0: the full sets (empty: no policy), under the versions the node was enrolled at
    long peers = resp.getJsonObject("peers").getLong("version");
    long acl = resp.getJsonObject("acl").getLong("version");
    assertTrue(peers > 0 && acl > 0, resp.encode());
    assertEquals(new JsonObject().put("version", peers).put("items", new JsonArray()), resp.getJsonObject("peers"));
    assertEquals(new JsonObject().put("version", acl).put("rules", new JsonArray()), resp.getJsonObject("acl"));
    assertEquals(new JsonArray(), resp.getJsonArray("commands"));
    assertEquals(new JsonArray(), resp.getJsonArray("ingress"));
    JsonObject fresh = beat(a, n, new JsonObject().put("known", new JsonObject().put("acl", acl))).bodyAsJsonObject();
    assertEquals(new JsonObject().put("version", peers).put("items", new JsonArray()), fresh.getJsonObject("peers"),
        "an agent without current peers gets the full (empty) set");
    assertEquals(new JsonObject().put("version", acl).put("unchanged", true), fresh.getJsonObject("acl"));
    JsonObject current = beat(b, n, new JsonObject().put("known", new JsonObject().put("acl", acl).put("peers", peers))).bodyAsJsonObject();
    assertEquals(new JsonObject().put("version", peers).put("unchanged", true), current.getJsonObject("peers"), "the other replica agrees");
    r = beat(a, n, Nodes.beat(7));
    resp = r.bodyAsJsonObject();
    JsonObject onB = http.get(b.coordinatorPort(), "/v1/nodes/" + n.id(), root).bodyAsJsonObject();
    assertEquals(resp.getString("server_time"), onB.getString("heartbeat"));
    assertEquals("online", onB.getString("status"));
    assertEquals(new JsonArray().add("198.51.100.8:40007"), onB.getJsonArray("endpoints"));
    assertEquals(new JsonArray().add("10.7.0.0/24 via hb-1"), onB.getJsonArray("routes"));
    assertEquals(7, onB.getJsonObject("telemetry").getInteger("seq"));
    JsonObject all = http.get(b.coordinatorPort(), "/v1/nodes?name_prefix=hb-", root).bodyAsJsonObject();
    assertEquals("online", all.getJsonArray("items").getJsonObject(0).getString("status"), "the list overlays live state too");
  }

  @Test
  void theNodesTableKeepsRoomOnEachPageForTheWriteBehindsInPlaceUpdates() throws Exception {
    // fillfactor 70 (V4): the write-behind's row updates stay HOT, without index insertions; measured
    // 97 % HOT against 75 % at the default 100 (load-tests/RESULTS.md, fourth session)
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'nodes'::regclass")) {
      assertTrue(rs.next());
      assertEquals("fillfactor=70", rs.getString(1));
    }
  }

  @Test
  void twoHundredHeartbeatsWithinAFlushIntervalCostAtMostTwoRowWrites() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "coalesce", "web", "prod");
    Metrics.awaitFlushes(http, 2, a.coordinatorPort(), b.coordinatorPort()); // any flush of the enrollment has settled
    long before = scalar("SELECT count(*) FROM test_node_writes WHERE node_id = '" + n.id() + "'");
    long t0 = System.nanoTime();
    List<Future<HttpResponse<Buffer>>> burst = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      burst.add(http.sendAsync(HttpMethod.POST, (i % 2 == 0 ? a : b).coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat",
          n.token(), Nodes.beat(i)));
    }
    for (Future<HttpResponse<Buffer>> f : burst) assertEquals(200, Http.await(f, 30).statusCode());
    long ms = (System.nanoTime() - t0) / 1_000_000;
    // a whole flush after the burst (it writes the row) and one more (it only settles the mark), on each replica
    Metrics.awaitFlushes(http, 3, a.coordinatorPort(), b.coordinatorPort());
    long writes = scalar("SELECT count(*) FROM test_node_writes WHERE node_id = '" + n.id() + "'") - before;
    System.out.println("200 heartbeats in " + ms + " ms -> " + writes + " row writes");
    assertTrue(ms < FLUSH_MS, "the burst fits in one flush interval: " + ms + " ms");
    assertTrue(writes >= 1 && writes <= 2, writes + " row writes for 200 heartbeats within " + ms + " ms");
    String live = http.get(a.coordinatorPort(), "/v1/nodes/" + n.id(), root).bodyAsJsonObject().getString("heartbeat");
    assertEquals(Instant.parse(live).toEpochMilli(),
        scalar("SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE id = '" + n.id() + "'"),
        "the row holds the live (last written) heartbeat");
    // Agent tokens' uses are not recorded (one tokens-row write per heartbeat otherwise); other tokens'
    // are: a token used on each replica after the burst shows that replica's usage flush (every 5 s) ran
    // since, so an agent use recorded during the burst would be written by now.
    for (Meshplane on : new Meshplane[] {a, b}) {
      TokenIssuer.Issued probe = Tokens.issue(on, "*", "*", Surface.ADMIN);
      assertEquals(200, http.get(on.coordinatorPort(), "/v1/auth/whoami", probe.jwt()).statusCode());
      Await.until("the usage flush of replica " + on.coordinatorPort() + " ran", 15_000,
          () -> scalar("SELECT count(*) FROM tokens WHERE id = '" + probe.record().id() + "' AND last_used_at IS NOT NULL"), c -> c == 1);
    }
    assertEquals(0, scalar("SELECT count(*) FROM tokens WHERE node_id = '" + n.id() + "' AND last_used_at IS NOT NULL"));
  }

  /** Beats once (on a) and waits until the write-behind has written that heartbeat to the row; returns its time. */
  static long beatAndAwaitRow(Nodes.Enrolled n, JsonObject body) throws Exception {
    HttpResponse<Buffer> r = beat(a, n, body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    long accepted = Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli();
    String sql = "SELECT coalesce((extract(epoch FROM heartbeat_at) * 1000)::bigint, 0) FROM nodes WHERE id = '" + n.id() + "'";
    Await.until("heartbeat " + accepted + " in the row within 3 flushes", 3 * FLUSH_MS, () -> scalar(sql), v -> v == accepted);
    return accepted;
  }

  static String rowText(Nodes.Enrolled n) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT array_to_string(endpoints, ',') || ' ' || array_to_string(routes, ',') || ' ' || telemetry::text"
             + " FROM nodes WHERE id = '" + n.id() + "'")) {
      assertTrue(rs.next());
      return rs.getString(1);
    }
  }

  @Test
  void fieldsUnchangedSinceTheMembersOwnLastWriteAreNotSentAgainUnlessSomeoneElseWroteTheRowSince() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "fields", "web", "prod");
    String asBeaten = "198.51.100.8:40007 10.7.0.0/24 {\"seq\": 7, \"agent_version\": \"1.4.0\"}";
    long t1 = beatAndAwaitRow(n, Nodes.beat(7));
    assertEquals(asBeaten, rowText(n));

    // Each step below beats right after the previous flush wrote the row, so the next flush finds the
    // value that the member wrote last time. Someone edits the row's fields behind the write-behind's
    // back (heartbeat time untouched): the same fields beaten again are not sent, the edit stays.
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("UPDATE nodes SET endpoints = '{192.0.2.1:1}' WHERE id = '" + n.id() + "'");
    }
    long t2 = beatAndAwaitRow(n, Nodes.beat(7));
    assertTrue(t2 > t1);
    assertEquals("192.0.2.1:1 10.7.0.0/24 {\"seq\": 7, \"agent_version\": \"1.4.0\"}", rowText(n),
        "only the heartbeat time was written");

    // Now the row no longer holds the member's last write (another heartbeat time, as when another
    // owner wrote it after a partition moved): the whole row is written again.
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("UPDATE nodes SET endpoints = '{192.0.2.1:1}', heartbeat_at = heartbeat_at + interval '1 millisecond' WHERE id = '"
          + n.id() + "'");
    }
    beatAndAwaitRow(n, Nodes.beat(7));
    assertEquals(asBeaten, rowText(n), "the row was written whole");

    // Fields that change are written.
    beatAndAwaitRow(n, Nodes.beat(9));
    assertEquals("198.51.100.10:40009 10.9.0.0/24 {\"seq\": 9, \"agent_version\": \"1.4.0\"}", rowText(n));
  }

  @Test
  void afterABurstFromAThousandNodesTheDatabaseHoldsEveryLastHeartbeatWithinThreeFlushes() throws Exception {
    List<Nodes.Enrolled> fleet = new ArrayList<>();
    for (int i = 0; i < 1000; i++) fleet.add(Nodes.enroll(http, (i % 2 == 0 ? a : b).coordinatorPort(), root, "fleet-" + i, "fleet", "prod"));
    Map<String, Long> lastAccepted = new HashMap<>();
    for (int round = 0; round < 2; round++) {
      List<Future<HttpResponse<Buffer>>> burst = new ArrayList<>();
      for (int i = 0; i < fleet.size(); i++) {
        Nodes.Enrolled n = fleet.get(i);
        burst.add(http.sendAsync(HttpMethod.POST, (i % 2 == round ? a : b).coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat",
            n.token(), Nodes.beat(i + round)));
      }
      for (int i = 0; i < burst.size(); i++) {
        HttpResponse<Buffer> r = Http.await(burst.get(i), 60);
        assertEquals(200, r.statusCode(), r.bodyAsString());
        lastAccepted.put(fleet.get(i).id(), Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli());
      }
    }
    Map<String, Long> stored = Await.until("every row holds its node's last accepted heartbeat (within 3 flushes)", 3 * FLUSH_MS, () -> {
      Map<String, Long> rows = new HashMap<>();
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = 'fleet'")) {
        while (rs.next()) rows.put(rs.getString(1), rs.getObject(2) == null ? null : rs.getLong(2));
      }
      return rows;
    }, lastAccepted::equals);
    assertEquals(lastAccepted, stored, "every row holds its node's last accepted heartbeat");
  }

  @Test
  void malformedHeartbeatsAre400NamingTheFieldAndChangeNothing() {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "bad-input", "web", "prod");
    assertEquals(200, beat(a, n, Nodes.beat(1)).statusCode());
    String before = http.get(a.coordinatorPort(), "/v1/nodes/" + n.id(), root).bodyAsJsonObject().getString("heartbeat");
    Map<String, JsonObject> cases = new LinkedHashMap<>();
    cases.put("endpoints[0]", new JsonObject().put("endpoints", new JsonArray().add("198.51.100.7")));
    cases.put("endpoints[1]", new JsonObject().put("endpoints", new JsonArray().add("1.2.3.4:1").add("300.1.1.1:80")));
    cases.put("endpoints", new JsonObject().put("endpoints", "1.2.3.4:5"));
    cases.put("public_key", new JsonObject().put("public_key", "dG9vIHNob3J0"));
    cases.put("routes[0]", new JsonObject().put("routes", new JsonArray().add("10.1.0.1/24")));
    cases.put("routes[0] ", new JsonObject().put("routes", new JsonArray().add("10.1.0.0/33")));
    cases.put("services[0]", new JsonObject().put("services", new JsonArray().add("ssh")));
    cases.put("telemetry", new JsonObject().put("telemetry", new JsonObject().put("blob", "x".repeat(5000))));
    cases.put("telemetry ", new JsonObject().put("telemetry", "fast"));
    cases.put("ingress[0].state", new JsonObject().put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "open"))));
    cases.put("command_results[0].id", new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", "x").put("status", "succeeded"))));
    cases.put("known.peers", new JsonObject().put("known", new JsonObject().put("peers", -1)));
    cases.put("relay", new JsonObject().put("relay", "Not A Relay!"));
    for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
      JsonObject p = problem(beat(a, n, c.getValue()), 400, "invalid_request");
      assertEquals(c.getKey().trim(), p.getJsonArray("errors").getJsonObject(0).getString("field"), c.getValue().encode());
    }
    assertEquals(before, http.get(a.coordinatorPort(), "/v1/nodes/" + n.id(), root).bodyAsJsonObject().getString("heartbeat"),
        "nothing was applied");
  }

  @Test
  void malformedEnrollmentsAre400NamingTheField() throws Exception {
    long before = scalar("SELECT count(*) FROM nodes");
    Map<String, JsonObject> cases = new LinkedHashMap<>();
    JsonObject ok = new JsonObject().put("name", "ok-name").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod");
    cases.put("name", ok.copy().put("name", "Bad_Name"));
    cases.put("name ", ok.copy().put("name", "x".repeat(64)));
    cases.put("name  ", ok.copy().put("name", 5));
    cases.put("public_key", ok.copy().put("public_key", "not base64!"));
    cases.put("public_key ", ok.copy().putNull("public_key"));
    cases.put("tags[0]", ok.copy().put("tags", new JsonArray().add("web")));
    cases.put("tags", ok.copy().put("tags", "tag:web"));
    cases.put("team", ok.copy().put("team", "Web"));
    cases.put("team ", removed(ok, "team"));
    for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
      JsonObject p = problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", root, c.getValue()), 400, "invalid_request");
      assertEquals(c.getKey().trim(), p.getJsonArray("errors").getJsonObject(0).getString("field"), c.getValue().encode());
    }
    assertEquals(before, scalar("SELECT count(*) FROM nodes"));
  }

  private static JsonObject removed(JsonObject o, String key) {
    JsonObject c = o.copy();
    c.remove(key);
    return c;
  }

  @Test
  void anotherNodesCredentialIs403AndADeletedNodesCredentialIs401Everywhere() {
    Nodes.Enrolled x = Nodes.enroll(http, a.coordinatorPort(), root, "cred-x", "web", "prod");
    Nodes.Enrolled y = Nodes.enroll(http, a.coordinatorPort(), root, "cred-y", "web", "prod");
    problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + y.id() + "/heartbeat", x.token(), Nodes.beat(1)), 403, "forbidden");
    String monitoring = Tokens.issue(a, "web", "prod", Surface.MONITORING).jwt();
    problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + y.id() + "/heartbeat", monitoring, Nodes.beat(1)), 403, "forbidden");
    assertEquals(200, beat(b, x, Nodes.beat(2)).statusCode());

    String operator = Tokens.issue(a, "web", "prod", Surface.OPERATOR).jwt();
    String otherTeam = Tokens.issue(a, "db", "prod", Surface.OPERATOR).jwt();
    problem(http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + x.id(), otherTeam, null), 404, "not_found");
    problem(http.get(a.coordinatorPort(), "/v1/nodes/" + x.id(), otherTeam), 404, "not_found");
    assertFalse(http.get(a.coordinatorPort(), "/v1/nodes?limit=1000", otherTeam).bodyAsString().contains(x.id()));
    assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + x.id(), operator, null).statusCode());
    problem(beat(a, x, Nodes.beat(3)), 401, "token_revoked");
    problem(beat(b, x, Nodes.beat(3)), 401, "token_revoked");
    problem(http.get(b.coordinatorPort(), "/v1/nodes/" + x.id(), root), 404, "not_found");
    assertEquals(200, beat(b, y, Nodes.beat(4)).statusCode(), "other nodes are untouched");
  }

  @Test
  void twoDeletionsOfOneNodeAtOnceGiveOne204OneAuditEventAndOne404() throws Exception {
    for (int i = 0; i < 6; i++) {
      Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "twice-" + i, "web", "prod");
      List<Integer> statuses = java.util.Collections.synchronizedList(new ArrayList<>());
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (Meshplane on : new Meshplane[] {a, b}) {
        Thread t = new Thread(() -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            return;
          }
          statuses.add(http.send(HttpMethod.DELETE, on.coordinatorPort(), "/v1/nodes/" + n.id(), root, null).statusCode());
        });
        t.start();
        threads.add(t);
      }
      go.countDown();
      for (Thread t : threads) t.join(20_000);
      statuses.sort(null);
      assertEquals(List.of(204, 404), statuses, "node " + n.id());
      assertEquals(1, scalar("SELECT count(*) FROM audit_events WHERE action = 'node.delete' AND target_id = '" + n.id() + "'"));
    }
  }

  @Test
  void aLiveEntryLeftBehindByADeletedNodeIsDroppedByTheWriteBehind() throws Exception {
    // what a heartbeat racing a deletion leaves: a live entry with no node row
    String orphan = "nd_01m8000000000000000000rphn";
    a.heartbeat().live().map().set(orphan, new io.meshplane.heartbeat.LiveNode(System.currentTimeMillis(), true, new String[0], "", "",
        new String[0], "{}"));
    Await.until("the leftover entry was dropped", 3 * FLUSH_MS + 2000, () -> !a.heartbeat().live().map().containsKey(orphan));
  }

  @Test
  void aTokenScopedToOneTeamCannotEnrollIntoAnother() {
    String enrollment = Tokens.issue(a, "web", "prod", Surface.ENROLLMENT).jwt();
    problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", enrollment,
        new JsonObject().put("name", "sneaky").put("public_key", Nodes.key()).put("team", "db")), 403, "forbidden");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", enrollment,
        new JsonObject().put("name", "defaulted").put("public_key", Nodes.key()));
    assertEquals(201, r.statusCode(), r.bodyAsString());
    assertEquals("web", r.bodyAsJsonObject().getJsonObject("node").getString("team"), "team defaults to the token's");
    String pipeline = Tokens.issue(a, "web", "prod", Surface.PIPELINE).jwt();
    problem(http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", pipeline,
        new JsonObject().put("name", "never").put("public_key", Nodes.key())), 403, "forbidden");
    assertNotEquals(403, http.get(a.coordinatorPort(), "/v1/nodes", pipeline).statusCode());
  }
}
