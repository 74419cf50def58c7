package io.meshplane.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/nodes/bulk} (and {@code /api/v1}'s, the same module) on a real replica: per-node
 * outcomes through the single-node paths (a node of another team is not_found, a second re-key is
 * refused 409, the audit trail holds one event per node plus one for the bulk), a filter and its cap,
 * a dry run, and hostile bodies refused naming the field.
 */
@Timeout(180)
class BulkApiTest {
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane app;
  static Http http;
  static String root;
  static String alphaOps;
  static String monitoring;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    db = cluster.db();
    app = cluster.replica(0);
    http = cluster.http();
    root = cluster.admin();
    alphaOps = Tokens.issue(app, "alpha", "prod", Surface.OPERATOR).jwt();
    monitoring = Tokens.issue(app, "alpha", "prod", Surface.MONITORING).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static HttpResponse<Buffer> bulk(String token, JsonObject body) {
    return http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/bulk", token, body);
  }

  static JsonObject ok(String token, JsonObject body) {
    HttpResponse<Buffer> r = bulk(token, body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static Map<String, JsonObject> byId(JsonObject answer) {
    Map<String, JsonObject> out = new LinkedHashMap<>();
    answer.getJsonArray("results").forEach(o -> out.put(((JsonObject) o).getString("id"), (JsonObject) o));
    return out;
  }

  static long audited(String action, String targetId) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM audit_events WHERE action = '" + action + "' AND outcome = 'success'"
             + (targetId == null ? "" : " AND target_id = '" + targetId + "'"))) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void retagAndRekeyByIdsWithPerNodeOutcomes() throws Exception {
    int port = app.coordinatorPort();
    Nodes.Enrolled a1 = Nodes.enroll(http, port, root, "bulk-a1", "alpha", "prod");
    Nodes.Enrolled a2 = Nodes.enroll(http, port, root, "bulk-a2", "alpha", "prod");
    Nodes.Enrolled g1 = Nodes.enroll(http, port, root, "bulk-g1", "gamma", "prod");
    String ghost = "nd_" + "0".repeat(26);
    long bulksBefore = audited("node.bulk", null);

    JsonObject retag = ok(alphaOps, new JsonObject().put("action", "retag").put("tags", new JsonArray().add("tag:web").add("tag:canary"))
        .put("ids", new JsonArray().add(a1.id()).add(g1.id()).add(a2.id()).add(ghost)));
    assertEquals(4, retag.getInteger("total"));
    assertEquals(2, retag.getInteger("ok"));
    List<String> order = new ArrayList<>();
    retag.getJsonArray("results").forEach(o -> order.add(((JsonObject) o).getString("id")));
    assertEquals(List.of(a1.id(), g1.id(), a2.id(), ghost), order, "results in the order of ids");
    Map<String, JsonObject> r = byId(retag);
    assertEquals("ok", r.get(a1.id()).getString("outcome"));
    assertEquals(200, r.get(a1.id()).getInteger("status"));
    assertEquals("bulk-a1", r.get(a1.id()).getString("name"));
    // another team's node does not exist for an alpha caller: as GET /v1/nodes/{id} says
    assertEquals("not_found", r.get(g1.id()).getString("outcome"));
    assertEquals(404, r.get(g1.id()).getInteger("status"));
    assertNull(r.get(g1.id()).getString("name"));
    assertEquals("not_found", r.get(ghost).getString("outcome"));
    for (Nodes.Enrolled n : List.of(a1, a2)) {
      JsonObject node = http.get(port, "/v1/nodes/" + n.id(), root).bodyAsJsonObject();
      assertEquals(new JsonArray().add("tag:web").add("tag:canary"), node.getJsonArray("tags"));
      assertEquals(1, audited("node.retag", n.id()), "one audit event per node, as the single route writes");
    }
    assertEquals(new JsonArray().add("tag:test"), http.get(port, "/v1/nodes/" + g1.id(), root).bodyAsJsonObject().getJsonArray("tags"));
    assertEquals(0, audited("node.retag", g1.id()));
    assertEquals(bulksBefore + 1, audited("node.bulk", null), "the bulk itself is audited once");

    // re-key: an operation per node; a second one meets the open one (409, as the single route)
    JsonObject rekey = ok(alphaOps, new JsonObject().put("action", "rekey").put("ids", new JsonArray().add(a1.id()).add(a2.id())));
    for (JsonObject res : byId(rekey).values()) {
      assertEquals("ok", res.getString("outcome"), res.encode());
      assertEquals(202, res.getInteger("status"));
      String op = res.getString("operation_id");
      assertNotNull(op, res.encode());
      JsonObject operation = http.get(port, "/v1/operations/" + op, root).bodyAsJsonObject();
      assertEquals("rekey", operation.getString("kind"), operation.encode());
      assertEquals(res.getString("id"), operation.getString("node_id"));
    }
    JsonObject again = ok(alphaOps, new JsonObject().put("action", "rekey").put("ids", new JsonArray().add(a1.id())));
    JsonObject refused = again.getJsonArray("results").getJsonObject(0);
    assertEquals("refused", refused.getString("outcome"), refused.encode());
    assertEquals(409, refused.getInteger("status"));
    assertEquals(0, again.getInteger("ok"));
  }

  @Test
  void deleteByFilterWithADryRunFirst() throws Exception {
    int port = app.coordinatorPort();
    Nodes.Enrolled d1 = Nodes.enroll(http, port, root, "gone-1", "alpha", "prod");
    Nodes.Enrolled d2 = Nodes.enroll(http, port, root, "gone-2", "alpha", "prod");
    Nodes.Enrolled other = Nodes.enroll(http, port, root, "gone-3", "delta", "prod"); // same prefix, other team
    JsonObject filter = new JsonObject().put("name_prefix", "gone-");

    JsonObject dry = ok(alphaOps, new JsonObject().put("action", "delete").put("filter", filter).put("dry_run", true));
    assertEquals(true, dry.getBoolean("dry_run"));
    assertEquals(List.of(d1.id(), d2.id()).stream().sorted().toList(), new ArrayList<>(byId(dry).keySet()));
    assertEquals(200, http.get(port, "/v1/nodes/" + d1.id(), root).statusCode(), "a dry run changes nothing");

    JsonObject done = ok(alphaOps, new JsonObject().put("action", "delete").put("filter", filter));
    assertEquals(2, done.getInteger("ok"));
    for (JsonObject res : byId(done).values()) {
      assertEquals(204, res.getInteger("status"));
      assertTrue(res.getString("name").startsWith("gone-"));
      assertEquals(404, http.get(port, "/v1/nodes/" + res.getString("id"), root).statusCode());
      assertEquals(1, audited("node.delete", res.getString("id")));
    }
    assertEquals(200, http.get(port, "/v1/nodes/" + other.id(), root).statusCode(), "outside the caller's scope: untouched");

    // a wide caller names the team in the filter
    JsonObject wide = ok(root, new JsonObject().put("action", "delete").put("filter", new JsonObject().put("team", "delta")));
    assertEquals(List.of(other.id()), new ArrayList<>(byId(wide).keySet()));
  }

  @Test
  void aFilterMatchingMoreThanTheCapIsRefused() throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("""
          INSERT INTO nodes (id, name, team, environment, address, public_key, created_at, updated_at)
          SELECT 'nd_m' || lpad(i::text, 25, '0'), 'm-' || i, 'many', 'prod', '100.101.0.0'::inet + i, md5('m' || i) || 'm', now(), now()
          FROM generate_series(1, 501) i""");
      try {
        HttpResponse<Buffer> r = bulk(root, new JsonObject().put("action", "retag").put("tags", new JsonArray())
            .put("filter", new JsonObject().put("team", "many")));
        assertEquals(409, r.statusCode(), r.bodyAsString());
        assertEquals("too_many", r.bodyAsJsonObject().getString("code"));
        assertEquals("filter", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
        assertTrue(r.bodyAsJsonObject().getString("detail").contains("500"), r.bodyAsString());
        // one fewer: within the cap (a dry run, to leave the rows as they are)
        JsonObject fits = ok(root, new JsonObject().put("action", "retag").put("tags", new JsonArray()).put("dry_run", true)
            .put("filter", new JsonObject().put("team", "many").put("address", "100.101.0.0/24")));
        assertEquals(255, fits.getInteger("total"), "100.101.0.1 .. 100.101.0.255");
        fits.getJsonArray("results").forEach(o -> assertEquals("ok", ((JsonObject) o).getString("outcome")));
      } finally {
        st.execute("DELETE FROM nodes WHERE team = 'many'");
      }
    }
  }

  @Test
  void hostileBodiesAreRefusedNamingTheField() {
    List<String> tooMany = new ArrayList<>();
    for (int i = 0; i < 501; i++) tooMany.add("nd_" + String.format("%026d", i));
    Map<JsonObject, String> bad = new LinkedHashMap<>();
    bad.put(new JsonObject().put("ids", new JsonArray().add("nd_" + "0".repeat(26))), "action");
    bad.put(new JsonObject().put("action", "nuke").put("ids", new JsonArray().add("nd_" + "0".repeat(26))), "action");
    bad.put(new JsonObject().put("action", "retag").put("ids", new JsonArray().add("nd_" + "0".repeat(26))), "tags");
    bad.put(new JsonObject().put("action", "delete").put("tags", new JsonArray()).put("ids", new JsonArray().add("nd_" + "0".repeat(26))), "tags");
    bad.put(new JsonObject().put("action", "retag").put("tags", new JsonArray().add("web")).put("ids", new JsonArray().add("nd_" + "0".repeat(26))), "tags[0]");
    bad.put(new JsonObject().put("action", "delete"), "ids");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray()), "ids");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray(tooMany)), "ids");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray().add("../etc")), "ids[0]");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray().add("nd_" + "0".repeat(26)).add("nd_" + "0".repeat(26))), "ids[1]");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray().add(7)), "ids[0]");
    bad.put(new JsonObject().put("action", "delete").put("ids", new JsonArray().add("nd_" + "0".repeat(26))).put("filter",
        new JsonObject().put("tag", "tag:x")), "filter");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject()), "filter");
    bad.put(new JsonObject().put("action", "delete").put("filter", "team=a"), "filter");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject().put("address", "100.64.0.1/24")), "filter.address");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject().put("colour", "red")), "filter.colour");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject().put("team", 3)), "filter.team");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject().put("team", "a")).put("dry_run", "yes"), "dry_run");
    bad.put(new JsonObject().put("action", "delete").put("filter", new JsonObject().put("team", "a")).put("force", true), "force");
    for (Map.Entry<JsonObject, String> e : bad.entrySet()) {
      HttpResponse<Buffer> r = bulk(root, e.getKey());
      assertEquals(400, r.statusCode(), e.getKey().encode() + " -> " + r.bodyAsString());
      assertEquals(e.getValue(), r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), e.getKey().encode());
    }
    // the permission is nodes:operate, whatever the action (a dry run too)
    HttpResponse<Buffer> denied = bulk(monitoring, new JsonObject().put("action", "retag").put("tags", new JsonArray()).put("dry_run", true)
        .put("ids", new JsonArray().add("nd_" + "0".repeat(26))));
    assertEquals(403, denied.statusCode(), denied.bodyAsString());
  }
}
