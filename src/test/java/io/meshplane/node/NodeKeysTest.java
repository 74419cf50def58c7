package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.heartbeat.LiveRepository;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One key per node (a key is a node's identity on the mesh): another node's key is refused at
 * enrollment (409 naming {@code public_key}, audited), in a heartbeat (409, audited, nothing stored),
 * and as a re-key's new key (the operation fails); the database refuses it too, and the write-behind
 * never stores it even when a heartbeat got past a replica that had not heard of the key yet.
 */
@Timeout(180)
class NodeKeysTest {
  static TestCluster cluster;
  static Meshplane a;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("writebehind.flush_interval", "100ms"));
    a = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void anotherNodesKeyIsRefusedAtEnrollmentInAHeartbeatAndAsAReKey() throws Exception {
    Nodes.Enrolled holder = Nodes.enroll(http, a.coordinatorPort(), admin, "holder", "red", "prod");
    String key = holder.node().getString("public_key");
    beat(holder, new JsonObject().put("public_key", key), 200);

    // enrollment, in another team: 409, the field named, the other node not
    JsonObject body = new JsonObject().put("name", "copycat").put("public_key", key).put("team", "blue").put("environment", "prod")
        .put("tags", new JsonArray().add("tag:x"));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(409, r.statusCode(), r.bodyAsString());
    assertEquals("key_in_use", r.bodyAsJsonObject().getString("code"));
    assertEquals("public_key", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertTrue(!r.bodyAsString().contains(holder.id()) && !r.bodyAsString().contains("red"), "the holder is not revealed: " + r.bodyAsString());
    assertEquals(0, get("/v1/nodes?name_prefix=copycat").getJsonArray("items").size(), "nothing enrolled");
    awaitAudited("node.enroll", "denied"); // the refused enrollment is audited

    // a heartbeat of another node reporting that key: 409, audited, and nothing of it stored
    Nodes.Enrolled other = Nodes.enroll(http, a.coordinatorPort(), admin, "other", "blue", "prod");
    String own = other.node().getString("public_key");
    beat(other, new JsonObject().put("public_key", own).put("endpoints", new JsonArray().add("198.51.100.1:41641")), 200);
    HttpResponse<Buffer> hb = beat(other, new JsonObject().put("public_key", key).put("endpoints", new JsonArray().add("198.51.100.2:41641")),
        409);
    assertEquals("public_key", hb.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    JsonObject shown = get("/v1/nodes/" + other.id());
    assertEquals(own, shown.getString("public_key"));
    assertEquals(new JsonArray().add("198.51.100.1:41641"), shown.getJsonArray("endpoints"), "the refused heartbeat stored nothing");
    awaitAudited("node.heartbeat", "denied"); // the refused heartbeat is audited

    // a re-key whose reported new key is the holder's: the heartbeat is refused and the operation fails
    HttpResponse<Buffer> op = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + other.id() + "/rekey", admin, null);
    assertEquals(202, op.statusCode(), op.bodyAsString());
    String opId = op.bodyAsJsonObject().getString("id");
    Await.until("the command is delivered", 20_000, () -> commands(beat(other, new JsonObject().put("public_key", own), 200)),
        c -> c.contains(opId));
    beat(other, new JsonObject().put("public_key", key).put("command_results", new JsonArray().add(new JsonObject().put("id", opId)
        .put("status", "succeeded"))), 409);
    JsonObject done = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("failed", done.getString("status"), done.encode());
    assertTrue(done.getJsonObject("result").getString("detail").contains("key of another node"), done.encode());
    assertEquals(own, get("/v1/nodes/" + other.id()).getString("public_key"));
  }

  @Test
  void theDatabaseHoldsOneNodePerKeyAndTheWriteBehindNeverStoresAnothersKey() throws Exception {
    Nodes.Enrolled x = Nodes.enroll(http, a.coordinatorPort(), admin, "x", "green", "prod");
    Nodes.Enrolled y = Nodes.enroll(http, a.coordinatorPort(), admin, "y", "green", "prod");
    String xKey = x.node().getString("public_key");
    String yKey = y.node().getString("public_key");
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      SQLException e = org.junit.jupiter.api.Assertions.assertThrows(SQLException.class,
          () -> st.executeUpdate("UPDATE nodes SET reported_key = '" + xKey + "' WHERE id = '" + y.id() + "'"));
      assertEquals("23505", e.getSQLState(), e.getMessage());
    }
    // a flush carrying x's key for y (a heartbeat let through by a replica that had not heard of x yet): y keeps its key
    LiveRepository rows = new LiveRepository(a.pool());
    long now = System.currentTimeMillis();
    String[] none = new String[1];
    LiveRepository.Flushed f = rows.flush(new String[] {y.id()}, new Long[] {now}, new Long[1], none, none, none, new String[] {xKey},
        none, new Long[1], new Long[1]).await(20, TimeUnit.SECONDS);
    assertEquals(1, f.rows(), "the heartbeat itself is written");
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT current_key, heartbeat_at IS NOT NULL FROM nodes WHERE id = '" + y.id() + "'")) {
      assertTrue(rs.next());
      assertEquals(yKey, rs.getString(1));
      assertTrue(rs.getBoolean(2));
    }
    // a new key of its own is stored
    String fresh = Nodes.key();
    rows.flush(new String[] {y.id()}, new Long[] {now + 1}, new Long[1], none, none, none, new String[] {fresh}, none, new Long[1],
        new Long[1]).await(20, TimeUnit.SECONDS);
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT current_key FROM nodes WHERE id = '" + y.id() + "'")) {
      assertTrue(rs.next());
      assertEquals(fresh, rs.getString(1));
    }
  }

  private static HttpResponse<Buffer> beat(Nodes.Enrolled n, JsonObject body, int status) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(status, r.statusCode(), r.bodyAsString());
    return r;
  }

  private static String commands(HttpResponse<Buffer> answer) {
    return answer.bodyAsJsonObject().getJsonArray("commands").encode();
  }

  private static JsonObject get(String path) {
    HttpResponse<Buffer> r = http.get(a.coordinatorPort(), path, admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static void awaitAudited(String action, String outcome) {
    Await.until("an audit event " + action + " " + outcome, 10_000, () -> get("/v1/audit?action=" + action + "&limit=100").getJsonArray("items"),
        items -> items.stream().anyMatch(o -> outcome.equals(((JsonObject) o).getString("outcome"))));
  }

  private static JsonObject awaitOperation(String id, Predicate<JsonObject> done) {
    return Await.until("operation " + id + " reaches the awaited state", 20_000, () -> get("/v1/operations/" + id), done);
  }
}
