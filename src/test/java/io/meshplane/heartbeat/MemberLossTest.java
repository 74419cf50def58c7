package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.TestReplicas;
import io.meshplane.testing.Tokens;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A member dies abruptly: no acknowledged heartbeat is lost, from the live map or (after the flush) from PostgreSQL. */
@Timeout(240)
class MemberLossTest {
  @Test
  void killingOneOfThreeMembersLosesNoAcknowledgedHeartbeat() throws Exception {
    try (TestDatabase db = TestDatabase.create(); TestReplicas replicas = new TestReplicas(3); Http http = new Http()) {
      Map<String, String> settings = Map.of("writebehind.flush_interval", "5s");
      Meshplane a = replicas.start(0, db.url(), settings);
      Meshplane b = replicas.start(1, db.url(), settings);
      Meshplane c = replicas.start(2, db.url(), settings);
      String root = Tokens.admin(a);
      List<Nodes.Enrolled> fleet = new ArrayList<>();
      for (int i = 0; i < 300; i++) fleet.add(Nodes.enroll(http, a.coordinatorPort(), root, "n-" + i, "loss", "prod"));
      Meshplane[] members = {a, b, c};
      List<Future<HttpResponse<Buffer>>> burst = new ArrayList<>();
      for (int i = 0; i < fleet.size(); i++) {
        burst.add(http.sendAsync(HttpMethod.POST, members[i % 3].coordinatorPort(), "/v1/nodes/" + fleet.get(i).id() + "/heartbeat",
            fleet.get(i).token(), Nodes.beat(i)));
      }
      Map<String, Long> acked = new HashMap<>();
      for (int i = 0; i < burst.size(); i++) {
        HttpResponse<Buffer> r = Http.await(burst.get(i), 60);
        assertEquals(200, r.statusCode(), r.bodyAsString());
        acked.put(fleet.get(i).id(), Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli());
      }

      // abrupt: no migration, no goodbye (the flush interval is long, so most entries are still dirty)
      c.services().hazelcast().getLifecycleService().terminate();

      Map<String, LiveNode> live = a.services().live().map().getAll(Set.copyOf(acked.keySet()));
      Map<String, Long> inMap = new HashMap<>();
      live.forEach((id, n) -> inMap.put(id, n.heartbeatAt()));
      assertEquals(acked, inMap, "every acknowledged heartbeat is in the live map");

      long deadline = System.currentTimeMillis() + 20_000;
      Map<String, Long> stored = new HashMap<>();
      do {
        Thread.sleep(250);
        stored.clear();
        try (Connection conn = db.connect(); Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = 'loss'")) {
          while (rs.next()) stored.put(rs.getString(1), rs.getObject(2) == null ? null : rs.getLong(2));
        }
      } while (!stored.equals(acked) && System.currentTimeMillis() < deadline);
      assertEquals(acked, stored, "the database converges to every acknowledged heartbeat");
    }
  }
}
