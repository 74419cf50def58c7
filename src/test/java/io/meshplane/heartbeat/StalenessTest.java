package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.ConfigLoader;
import io.meshplane.app.Database;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Staleness across two replicas: exactly-once transitions, recovery, and the cold-start grace. */
@Timeout(180)
class StalenessTest {
  static final long STALE_MS = 3000;

  static long count(TestDatabase db, String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static BooleanSupplier events(TestDatabase db, String type, String nodeId, long atLeast) {
    return () -> {
      try {
        return count(db, "SELECT count(*) FROM node_events WHERE type = '" + type + "' AND node_id = '" + nodeId + "'") >= atLeast;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    };
  }

  @Test
  void transitionsAreRecordedExactlyOnceAcrossReplicasAndNobodyIsStaleBeforeTheGraceHasPassed() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      // A node whose last heartbeat, an hour old, was flushed before the whole cluster went down.
      try (Database d = Database.open(ConfigLoader.load(null, false, Map.of(), Map.of("postgres.url", db.url())))) {
        d.migrate();
      }
      String ghost = "nd_01m8000000000000000000ghst";
      try (Connection c = db.connect(); Statement st = c.createStatement()) {
        st.execute("INSERT INTO nodes (id, name, team, environment, address, public_key, heartbeat_at, created_at, updated_at) "
            + "VALUES ('" + ghost + "', 'ghost', 'web', 'prod', '100.64.250.1', '" + Nodes.key() + "', now() - interval '1 hour', now(), now())");
      }
      Map<String, String> settings = Map.of("heartbeat.stale_after", STALE_MS + "ms", "writebehind.flush_interval", "200ms");
      long started = System.currentTimeMillis();
      Meshplane a = cluster.start(0, settings);
      Meshplane b = cluster.start(1, settings);
      String root = cluster.admin();
      Nodes.Enrolled live = Nodes.enroll(http, a.coordinatorPort(), root, "live-1", "web", "prod");
      assertEquals(200, http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + live.id() + "/heartbeat", live.token(),
          Nodes.beat(1)).statusCode());

      // cold-start grace: the ghost is not declared stale while the cluster is younger than stale_after
      // (every read during the grace shows it online), and its event is recorded after the grace
      Await.until("the ghost declared stale", 10_000, () -> {
        String status = http.get(b.coordinatorPort(), "/v1/nodes/" + ghost, root).bodyAsJsonObject().getString("status");
        if (System.currentTimeMillis() - started < STALE_MS - 700) assertEquals("online", status, "declared stale during the grace");
        return count(db, "SELECT count(*) FROM node_events WHERE type = 'node.stale' AND node_id = '" + ghost + "'");
      }, n -> n >= 1);
      long declaredAt = count(db, "SELECT (extract(epoch FROM at) * 1000)::bigint FROM node_events WHERE node_id = '" + ghost + "'");
      assertTrue(declaredAt - started >= STALE_MS - 50, "declared " + (declaredAt - started) + " ms after the start");
      Await.until("live-1 declared stale", 10_000, events(db, "node.stale", live.id(), 1));
      assertEquals("stale", http.get(b.coordinatorPort(), "/v1/nodes/" + live.id(), root).bodyAsJsonObject().getString("status"));
      awaitScans(a, b); // several more scans on both replicas
      assertEquals(1, count(db, "SELECT count(*) FROM node_events WHERE type = 'node.stale' AND node_id = '" + live.id() + "'"));
      assertEquals(1, count(db, "SELECT count(*) FROM node_events WHERE type = 'node.stale' AND node_id = '" + ghost + "'"));

      // recovery on the next heartbeat, through the other replica
      assertEquals(200, http.send(HttpMethod.POST, b.coordinatorPort(), "/v1/nodes/" + live.id() + "/heartbeat", live.token(),
          Nodes.beat(2)).statusCode());
      assertEquals("online", http.get(a.coordinatorPort(), "/v1/nodes/" + live.id(), root).bodyAsJsonObject().getString("status"));
      Await.until("live-1 back online", 5_000, events(db, "node.online", live.id(), 1));
      awaitScans(a, b);
      assertEquals(1, count(db, "SELECT count(*) FROM node_events WHERE type = 'node.online' AND node_id = '" + live.id() + "'"));

      JsonArray listed = http.get(a.coordinatorPort(), "/v1/events?node_id=" + live.id(), root).bodyAsJsonObject().getJsonArray("items");
      assertEquals(2, listed.size(), listed.encodePrettily());
      assertEquals("node.stale", listed.getJsonObject(0).getString("type"));
      assertEquals("node.online", listed.getJsonObject(1).getString("type"));
      assertEquals("live-1", listed.getJsonObject(0).getJsonObject("node").getString("name"));
      String other = Tokens.issue(a, "db", "prod", io.meshplane.access.Surface.MONITORING).jwt();
      assertEquals(0, http.get(a.coordinatorPort(), "/v1/events", other).bodyAsJsonObject().getJsonArray("items").size(), "scoped");

      double transitions = metric(http, a, "mesh_node_stale_transitions_total") + metric(http, b, "mesh_node_stale_transitions_total");
      assertEquals(2.0, transitions, "counted once cluster-wide");
    }
  }

  static double metric(Http http, Meshplane m, String name) {
    return Metrics.value(http, m.coordinatorPort(), name);
  }

  /** Three more staleness scans on each replica, each started after this call (any duplicate would be recorded by then). */
  static void awaitScans(Meshplane... replicas) {
    long[] from = new long[replicas.length];
    for (int i = 0; i < replicas.length; i++) from[i] = replicas[i].heartbeat().stalenessScans();
    for (int i = 0; i < replicas.length; i++) {
      Meshplane m = replicas[i];
      long target = from[i] + 3;
      Await.until("3 more staleness scans on " + m.coordinatorPort(), () -> m.heartbeat().stalenessScans(), n -> n >= target);
    }
  }
}
