package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import com.hazelcast.map.IMap;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.LogLines;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One client's data must never hurt another's: a row PostgreSQL refuses is isolated from its batch and
 * quarantined while every other row is written, and a record that cannot be read never takes a list of
 * nodes down. The refused row is put straight into the live map, as a replica of an older version (one
 * that let such telemetry through the door) would have left it. The quarantine is logged once per
 * node, at WARN, naming the node, however many flushes meet the row again.
 */
@Timeout(180)
class WriteBehindPoisonTest {
  static final long FLUSH_MS = 1000;
  static LogCapture logs;
  static LogLines warnings;
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane app;
  static Http http;
  static String root;

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    warnings = LogLines.attach(Level.WARN);
    cluster = TestCluster.started(1, Map.of("writebehind.flush_interval", FLUSH_MS + "ms"));
    db = cluster.db();
    app = cluster.replica(0);
    http = cluster.http();
    root = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
    if (logs != null) logs.close();
    if (warnings != null) warnings.close();
  }

  @Test
  void oneUnstorableRowAmongAThousandHoldsBackNoOtherRow() throws Exception {
    logs.clear();
    warnings.clear();
    List<String> ids = new ArrayList<>();
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      // 1,001 rows with distinct addresses from a range of their own, and keys of their own (one key per node)
      st.execute("INSERT INTO nodes (id, name, team, environment, address, public_key, created_at, updated_at) "
          + "SELECT 'nd_poison' || lpad(g::text, 20, '0'), 'poison-' || g, 'web', 'prod', '100.120.0.0'::inet + g, "
          + "encode(sha256(('poison-' || g)::bytea), 'base64'), now(), now() FROM generate_series(0, 1000) g");
      try (ResultSet rs = st.executeQuery("SELECT id FROM nodes WHERE name LIKE 'poison-%' ORDER BY id")) {
        while (rs.next()) ids.add(rs.getString(1));
      }
    }
    assertEquals(1001, ids.size());
    String bad = ids.get(500);
    long at = System.currentTimeMillis();
    Map<String, LiveNode> entries = new HashMap<>();
    for (String id : ids) {
      String telemetry = id.equals(bad) ? "{\"x\":\"\\u0000\"}" : "{\"seq\":1}";
      entries.put(id, new LiveNode(at, true, new String[] {"198.51.100.7:41641"}, "", "", new String[0], telemetry));
    }
    IMap<String, LiveNode> map = app.heartbeat().live().map();
    long t0 = System.currentTimeMillis();
    map.setAll(entries);

    // every healthy row within 3 flush intervals of the moment the entries were put
    Await.until("every healthy row is written", Math.max(0, t0 + 3 * FLUSH_MS - System.currentTimeMillis()),
        () -> count("SELECT count(*) FROM nodes WHERE name LIKE 'poison-%' AND id <> '" + bad
            + "' AND heartbeat_at = to_timestamp(" + at + " / 1000.0) AND telemetry = '{\"seq\":1}'"), n -> n == 1000);
    System.out.println("1,000 healthy rows written " + (System.currentTimeMillis() - t0) + " ms after the entries were put");

    // the refused row: its heartbeat time is written alone, the telemetry PostgreSQL refuses is held back
    awaitCount("SELECT count(*) FROM nodes WHERE id = '" + bad + "' AND heartbeat_at = to_timestamp(" + at
        + " / 1000.0) AND telemetry = '{}'", 1);
    String metrics = http.get(app.coordinatorPort(), "/metrics").bodyAsString();
    assertTrue(metrics.contains("mesh_writebehind_quarantined_total 1.0"), "counted once");
    assertTrue(metrics.contains("mesh_writebehind_quarantined_rows 1.0"), "and shown as held back now");
    HttpResponse<Buffer> ready = http.get(app.coordinatorPort(), "/readyz");
    assertEquals(200, ready.statusCode(), "one bad row is not an outage: " + ready.bodyAsString());
    JsonObject wb = ready.bodyAsJsonObject().getJsonObject("checks").getJsonObject("writebehind");
    assertEquals("UP", wb.getString("status"));
    assertEquals(1, wb.getInteger("quarantined"));
    assertEquals(new JsonArray().add(bad), wb.getJsonArray("quarantined_nodes"));
    assertEquals(List.of(), logs.problems(), "a warning naming the node, no error and no stack trace");
    assertQuarantineLoggedOnce(bad);

    // the node keeps beating with the same bad telemetry, one flush after another: still no batch
    // fails, no second count, no second warning
    for (int beat = 1; beat <= 3; beat++) {
      long t = at + 1000L * beat;
      map.set(bad, new LiveNode(t, true, new String[0], "", "", new String[0], "{\"x\":\"\\u0000\"}"));
      awaitCount("SELECT count(*) FROM nodes WHERE id = '" + bad + "' AND heartbeat_at = to_timestamp(" + t + " / 1000.0)", 1);
    }
    assertTrue(http.get(app.coordinatorPort(), "/metrics").bodyAsString().contains("mesh_writebehind_quarantined_total 1.0"));
    assertQuarantineLoggedOnce(bad);

    // once its data can be stored again, the row is written whole and leaves the quarantine
    map.set(bad, new LiveNode(at + 5000, true, new String[0], "", "", new String[0], "{\"fixed\":true}"));
    awaitCount("SELECT count(*) FROM nodes WHERE id = '" + bad + "' AND telemetry = '{\"fixed\":true}'", 1);
    Await.until("the node left the quarantine", 5000, () -> app.heartbeat().quarantine().size() == 0);
    assertEquals(0, http.get(app.coordinatorPort(), "/readyz").bodyAsJsonObject().getJsonObject("checks")
        .getJsonObject("writebehind").getInteger("quarantined"));
    assertQuarantineLoggedOnce(bad);
  }

  /**
   * Exactly one WARN line names {@code bad} and says it is quarantined, and no line at WARN or above
   * names any other of the poison rows (the healthy ones, written in their batches).
   */
  private static void assertQuarantineLoggedOnce(String bad) {
    List<LogLines.Line> aboutBad = warnings.at(Level.WARN, m -> m.contains(bad));
    assertEquals(1, aboutBad.size(), "one warning naming " + bad + ": " + aboutBad);
    assertTrue(aboutBad.get(0).message().contains("[node: " + bad + "]") && aboutBad.get(0).message().contains("it is quarantined"),
        aboutBad.get(0).toString());
    List<LogLines.Line> aboutPoison = warnings.lines().stream().filter(l -> l.message().contains("nd_poison")).toList();
    assertEquals(aboutBad, aboutPoison, "nothing at WARN or above about any other row");
  }

  @Test
  void telemetryThatCannotBeStoredOrReadIsRefusedAtTheDoorNamingTheField() {
    Nodes.Enrolled n = Nodes.enroll(http, app.coordinatorPort(), root, "door-1", "web", "prod");
    String eightLevels = "{\"a\":".repeat(7) + "{}" + "}".repeat(7);
    Map<String, String[]> cases = new HashMap<>();
    cases.put("{\"telemetry\":{\"x\":\"\\u0000\"}}", new String[] {"telemetry.x", "NUL"});
    cases.put("{\"telemetry\":{\"x\\u0000\":1}}", new String[] {"telemetry", "NUL"});
    cases.put("{\"telemetry\":{\"x\":\"\\ud800\"}}", new String[] {"telemetry.x", "surrogate"});
    cases.put("{\"telemetry\":{\"big\":1e999}}", new String[] {"telemetry.big", "finite"});
    cases.put("{\"telemetry\":" + "{\"a\":".repeat(8) + "{}" + "}".repeat(8) + "}", new String[] {"telemetry.a.a.a.a.a.a.a.a", "deeper than 8"});
    cases.put("{\"telemetry\":{\"" + "k".repeat(65) + "\":1}}", new String[] {"telemetry", "longer than 64"});
    cases.put("{\"telemetry\":{\"pad\":\"" + "x".repeat(4100) + "\"}}", new String[] {"telemetry", "4096 bytes"});
    for (Map.Entry<String, String[]> c : cases.entrySet()) {
      HttpResponse<Buffer> r = http.sendRaw(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat",
          "application/json", Buffer.buffer(c.getKey()), n.token());
      assertEquals(400, r.statusCode(), c.getKey() + " " + r.bodyAsString());
      JsonObject e = r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0);
      assertEquals(c.getValue()[0], e.getString("field"), r.bodyAsString());
      assertTrue(e.getString("message").contains(c.getValue()[1]), r.bodyAsString());
    }
    // eight levels are allowed
    HttpResponse<Buffer> ok = http.sendRaw(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat",
        "application/json", Buffer.buffer("{\"telemetry\":" + eightLevels + "}"), n.token());
    assertEquals(200, ok.statusCode(), ok.bodyAsString());
  }

  @Test
  void aRecordWhoseTelemetryCannotBeReadDoesNotTakeTheListDown() throws Exception {
    Nodes.Enrolled deep = Nodes.enroll(http, app.coordinatorPort(), root, "deep-1", "deep", "prod");
    Nodes.Enrolled fine = Nodes.enroll(http, app.coordinatorPort(), root, "fine-1", "deep", "prod");
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + fine.id() + "/heartbeat", fine.token(),
        Nodes.beat(1)).statusCode());
    String thousandDeep = "{\"a\":".repeat(998) + "1" + "}".repeat(998);
    // as stored by an older version: in PostgreSQL and in the live map
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement("UPDATE nodes SET telemetry = ?::jsonb, heartbeat_at = now() WHERE id = ?")) {
      st.setString(1, thousandDeep);
      st.setString(2, deep.id());
      st.executeUpdate();
    }
    app.heartbeat().live().map().set(deep.id(), new LiveNode(System.currentTimeMillis(), false, new String[0], "", "", new String[0], thousandDeep));
    logs.clear();
    HttpResponse<Buffer> list = http.get(app.coordinatorPort(), "/v1/nodes", root);
    assertEquals(200, list.statusCode(), list.bodyAsString().substring(0, Math.min(300, list.bodyAsString().length())));
    JsonObject deepRecord = null;
    JsonObject fineRecord = null;
    for (Object o : list.bodyAsJsonObject().getJsonArray("items")) {
      JsonObject j = (JsonObject) o;
      if (j.getString("id").equals(deep.id())) deepRecord = j;
      if (j.getString("id").equals(fine.id())) fineRecord = j;
    }
    assertNotNull(deepRecord);
    assertEquals(new JsonObject(), deepRecord.getJsonObject("telemetry"), "shown as {} instead of failing");
    assertEquals(1, fineRecord.getJsonObject("telemetry").getInteger("seq"), "the others are whole");
    assertEquals(200, http.get(app.coordinatorPort(), "/v1/nodes/" + deep.id(), root).statusCode());
    assertEquals(List.of(), logs.problems());
    app.heartbeat().live().map().delete(deep.id());
  }

  private static int count(String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void awaitCount(String sql, int expected) {
    Await.until(sql + " = " + expected, 10_000, () -> count(sql), n -> n == expected);
  }
}
