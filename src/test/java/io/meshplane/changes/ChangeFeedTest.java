package io.meshplane.changes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The change log has one owner and one way in: whoever makes a change that peers see appends it in its
 * own transaction and announces it, and every replica's followers apply it in order, whichever replica
 * made or found it: an enrollment and a deletion (the inventory), new endpoints and a new key (the
 * write-behind), stale and online again (the staleness monitors). A heartbeat that changes nothing
 * peers see appends nothing. An entry a replica cannot read is skipped in one line, and the next one
 * is applied.
 */
@Timeout(120)
class ChangeFeedTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;
  static String watcher;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("writebehind.flush_interval", "200ms", "heartbeat.stale_after", "2s"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void everyReplicaAppliesWhatAnyReplicaAppended() throws Exception {
    JsonObject all = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("*"))
        .put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*"))));
    assertEquals(200, http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=feed&environment=prod", admin, all).statusCode());
    watcher = Nodes.enroll(http, a.coordinatorPort(), admin, "watcher", "feed", "prod").id();
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), admin, "moving", "feed", "prod");
    // enrolled on a: b's model holds it as the watcher's peer
    JsonObject peer = awaitPeer(n.id(), p -> true);
    assertEquals(new JsonArray(), peer.getJsonArray("endpoints"));

    // new endpoints and a key, found by a's write-behind: b's model has them
    String key = Nodes.key();
    JsonObject body = new JsonObject().put("endpoints", new JsonArray().add("198.51.100.7:41641")).put("public_key", key);
    beat(n, body);
    peer = awaitPeer(n.id(), p -> p.getJsonArray("endpoints").contains("198.51.100.7:41641") && key.equals(p.getString("public_key")));
    assertTrue(peer.getBoolean("online"), "its first heartbeat makes it online");

    // the same state again: written (a newer heartbeat time in PostgreSQL), but nothing peers see, so nothing appended
    long logged = entriesOf(n.id());
    String written = heartbeatAt(n.id());
    beat(n, body);
    Await.until("the write-behind wrote the second heartbeat", 20_000, () -> !heartbeatAt(n.id()).equals(written));
    assertEquals(logged, entriesOf(n.id()), "a heartbeat that changes nothing peers see appends nothing");

    // silence: stale after 2 s (found by one replica's monitor), then online again with the next heartbeat
    awaitPeer(n.id(), p -> !p.getBoolean("online"));
    beat(n, body);
    awaitPeer(n.id(), p -> p.getBoolean("online"));

    // deleted on a: gone from b's model
    assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + n.id(), admin, null).statusCode());
    Await.until("b's model dropped the deleted node", 20_000, () -> peerOf(n.id()) == null);
    long appliedOnA = a.changes().position();
    Await.until("b applied everything a did", 20_000, () -> b.changes().position() >= appliedOnA);
  }

  /** An entry this version cannot read (a newer replica's kind during a rolling upgrade) is skipped in one line; the next one is applied. */
  @Test
  void anUnreadableEntryIsSkippedWithoutAStackTraceAndTheNextOneIsApplied() throws Exception {
    try (LogCapture logs = LogCapture.attach()) {
      try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
        st.execute("WITH clock AS (UPDATE mesh_clock SET seq = seq + 1 RETURNING seq) "
            + "INSERT INTO mesh_changes (seq, kind, data) SELECT seq, 'teleport', '{\"id\":\"nd_x\"}' FROM clock");
        st.execute("WITH clock AS (UPDATE mesh_clock SET seq = seq + 1 RETURNING seq) "
            + "INSERT INTO mesh_changes (seq, kind, data) SELECT seq, 'enroll', '{\"broken\":true}' FROM clock");
      }
      a.changes().announce();
      Nodes.Enrolled next = Nodes.enroll(http, a.coordinatorPort(), admin, "after-junk", "feed", "prod");
      Await.until("b applied past the unreadable entries", 20_000, () -> b.changes().position() >= a.changes().position());
      HttpResponse<Buffer> view = http.get(b.coordinatorPort(), "/v1/nodes/" + next.id() + "/peers", admin);
      assertEquals(200, view.statusCode(), "the entry after them is applied on b: " + view.bodyAsString());
      assertEquals(List.of(), logs.problems());
    }
  }

  static void beat(Nodes.Enrolled n, JsonObject body) {
    assertEquals(200, http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body).statusCode());
  }

  /** The node's entry in the watcher's peers as replica b's model holds it, or null. */
  static JsonObject peerOf(String id) {
    HttpResponse<Buffer> r = http.get(b.coordinatorPort(), "/v1/nodes/" + watcher + "/peers", admin);
    if (r.statusCode() != 200) return null;
    for (Object o : r.bodyAsJsonObject().getJsonObject("peers").getJsonArray("items")) {
      if (((JsonObject) o).getString("id").equals(id)) return (JsonObject) o;
    }
    return null;
  }

  static JsonObject awaitPeer(String id, Predicate<JsonObject> state) {
    return Await.until("b's model shows the peer " + id + " as expected", 20_000, () -> peerOf(id), p -> p != null && state.test(p));
  }

  static long entriesOf(String id) throws Exception {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM mesh_changes WHERE data::text LIKE '%" + id + "%'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static String heartbeatAt(String id) {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT coalesce(heartbeat_at::text, '') FROM nodes WHERE id = '" + id + "'")) {
      rs.next();
      return rs.getString(1);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

}
