package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lists whose cost grows with the data have a budget and a lane of their own: on the read pool
 * (postgres.read_pool_size connections, never the main pool's), each statement is cancelled by
 * PostgreSQL at postgres.read_timeout and answered 503 {@code query_timeout} with Retry-After, while
 * everything else (enrollments, heartbeats, a list that an index serves) goes on.
 */
@Timeout(180)
class ReadBudgetTest {
  static TestCluster cluster;
  static Meshplane a;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.started(1, Map.of("postgres.read_timeout", "40ms", "postgres.read_pool_size", "2"));
    a = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    // 300,000 nodes of one team, written straight into the table (the API would take minutes)
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      st.execute("INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at) "
          + "SELECT 'nd_' || lpad(i::text, 26, '0'), 'big-' || i, 'big', 'prod', '10.0.0.0'::inet + i, md5(i::text), ARRAY['tag:t'], "
          + "now(), now() FROM generate_series(1, 300000) i");
      st.execute("ANALYZE nodes");
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void aListThatWouldReadTheWholeFleetIsCancelledAndNobodyElseWaits() {
    // four sweeps at once with a filter that matches nothing: every one reads the 300,000 rows of the scope
    List<Future<HttpResponse<Buffer>>> sweeps = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      sweeps.add(http.request(io.vertx.core.http.HttpMethod.GET, a.coordinatorPort(), "/v1/nodes?tag=tag:none&limit=1000")
          .bearerTokenAuthentication(admin).send());
    }
    // meanwhile an enrollment (main pool) and a heartbeat go through
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), admin, "small-1", "small", "prod");
    assertEquals(200, http.send(io.vertx.core.http.HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        Nodes.beat(1)).statusCode());
    for (Future<HttpResponse<Buffer>> f : sweeps) {
      HttpResponse<Buffer> r = Http.await(f, 60);
      assertEquals(503, r.statusCode(), r.bodyAsString());
      assertEquals("query_timeout", r.bodyAsJsonObject().getString("code"));
      assertTrue(Integer.parseInt(r.getHeader("Retry-After")) > 0);
    }
    // a list an index serves answers as before: the first page of the scope, in id order
    HttpResponse<Buffer> page = http.get(a.coordinatorPort(), "/v1/nodes?limit=1000", admin);
    assertEquals(200, page.statusCode(), page.bodyAsString());
    assertEquals(1000, page.bodyAsJsonObject().getJsonArray("items").size());
    // the audit trail by action: an index (V13), not a scan
    assertEquals(200, http.get(a.coordinatorPort(), "/v1/audit?action=acl.rollback", admin).statusCode());
  }
}
