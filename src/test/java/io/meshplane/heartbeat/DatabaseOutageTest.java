package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PgProxy;
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

/** PostgreSQL unreachable: heartbeats keep being accepted, durable writes answer 503, and the database catches up after. */
@Timeout(180)
class DatabaseOutageTest {
  @Test
  void heartbeatsSurviveADatabaseOutageAndTheDatabaseCatchesUp() throws Exception {
    try (TestCluster cluster = TestCluster.of(1); PgProxy proxy = new PgProxy()) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Meshplane app = cluster.start(0, db.url("127.0.0.1", proxy.port()), Map.of("writebehind.flush_interval", "300ms"));
      int port = app.coordinatorPort();
      String root = cluster.admin();
      Nodes.Enrolled n = Nodes.enroll(http, port, root, "outage", "web", "prod");
      assertEquals(200, beat(http, port, n, 0).statusCode());

      proxy.cut();
      double failures = Metrics.value(http, port, "mesh_writebehind_failures_total");
      for (int i = 1; i <= 20; i++) {
        HttpResponse<Buffer> r = beat(http, port, n, i);
        assertEquals(200, r.statusCode(), "heartbeats are accepted while PostgreSQL is down: " + r.bodyAsString());
      }
      // flushes fail meanwhile (counted), the one node's entry is the backlog they report
      Await.until("a failed flush counted", () -> Metrics.value(http, port, "mesh_writebehind_failures_total"), f -> f > failures);
      HttpResponse<Buffer> r = beat(http, port, n, 21);
      assertEquals(200, r.statusCode(), "heartbeats are accepted while flushes fail: " + r.bodyAsString());
      long last = Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli();
      Await.until("the backlog is reported", () -> Metrics.value(http, port, "mesh_writebehind_backlog"), b -> b == 1.0);
      HttpResponse<Buffer> enroll = http.send(HttpMethod.POST, port, "/v1/nodes", root,
          new JsonObject().put("name", "during-outage").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod"));
      assertEquals(503, enroll.statusCode(), enroll.bodyAsString());
      assertEquals("unavailable", enroll.bodyAsJsonObject().getString("code"));
      assertEquals(503, http.get(port, "/readyz").statusCode(), "not ready without PostgreSQL");
      // the probe the Kubernetes manifests use: heartbeats are taken, so the replica stays in the Service;
      // the postgres check still runs and shows DOWN, marked as left out of the verdict
      HttpResponse<Buffer> forHeartbeats = http.get(port, "/readyz?exclude=postgres");
      assertEquals(200, forHeartbeats.statusCode(), forHeartbeats.bodyAsString());
      JsonObject pg = forHeartbeats.bodyAsJsonObject().getJsonObject("checks").getJsonObject("postgres");
      assertEquals("DOWN", pg.getString("status"), forHeartbeats.bodyAsString());
      assertEquals(Boolean.TRUE, pg.getBoolean("excluded"), forHeartbeats.bodyAsString());
      // a name that is not a check is refused, naming the parameter
      HttpResponse<Buffer> unknown = http.get(port, "/readyz?exclude=postgres,nope");
      assertEquals(400, unknown.statusCode(), unknown.bodyAsString());
      assertEquals("exclude", unknown.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), unknown.bodyAsString());

      proxy.restore();
      Await.until("the database caught up with the last accepted heartbeat " + last, 20_000, () -> {
        try (Connection c = db.connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE id = '" + n.id() + "'")) {
          rs.next();
          return rs.getLong(1);
        }
      }, stored -> stored == last);
      assertEquals(201, http.send(HttpMethod.POST, port, "/v1/nodes", root,
          new JsonObject().put("name", "after-outage").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod"))
          .statusCode());
    }
  }

  static HttpResponse<Buffer> beat(Http http, int port, Nodes.Enrolled n, int i) {
    return http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(i));
  }
}
