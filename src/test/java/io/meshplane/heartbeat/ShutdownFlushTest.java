package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A single replica stopped right after a heartbeat still writes it: the live map dies with the last
 * member. The next cold start seeds the live map from that row, acknowledged policy versions included.
 */
@Timeout(120)
class ShutdownFlushTest {
  @Test
  void theLastMemberFlushesItsBacklogBeforeItStops() throws Exception {
    try (TestCluster cluster = TestCluster.of(1)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Meshplane app = cluster.start(0, Map.of("writebehind.flush_interval", "10m"));
      String root = cluster.admin();
      Nodes.Enrolled n = Nodes.enroll(http, app.coordinatorPort(), root, "last-words", "web", "prod");
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
          Nodes.beat(1).put("known", new JsonObject().put("peers", 7).put("acl", 5)));
      assertEquals(200, r.statusCode());
      long accepted = Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli();
      app.close();
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE id = '" + n.id() + "'")) {
        rs.next();
        assertEquals(accepted, rs.getLong(1), "flushed at shutdown although the flush interval is 10 minutes");
      }

      // a cold start of the whole cluster: the live entry comes back from the row, with what the node acknowledged and when
      Meshplane again = cluster.start(0, Map.of("writebehind.flush_interval", "10m"));
      JsonObject sync = http.get(again.coordinatorPort(), "/v1/nodes/" + n.id(), root).bodyAsJsonObject().getJsonObject("policy_sync");
      assertEquals(new JsonObject().put("peers", 7).put("acl", 5), sync.getJsonObject("acknowledged"), sync.encode());
      assertEquals(r.bodyAsJsonObject().getString("server_time"), sync.getString("acknowledged_at"), sync.encode());
      assertEquals(1, again.heartbeat().live().map().size(), "the live map was seeded from PostgreSQL");
      assertEquals(7, again.heartbeat().live().map().get(n.id()).knownPeers(), "the seeded entry holds the acknowledged versions");
    }
  }
}
