package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.PgProxy;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A replica started while PostgreSQL is away answers its probes from the first second (so an
 * orchestrator does not kill it in a loop), keeps trying in the background, and becomes ready without
 * a restart; one whose credentials are wrong stops with a message naming the setting.
 */
@Timeout(180)
class StartWithoutDatabaseTest {
  @Test
  void probesAnswerWhilePostgresIsUnreachableAndTheReplicaBecomesReadyWhenItAnswers() throws Exception {
    try (TestCluster cluster = TestCluster.of(1); PgProxy proxy = new PgProxy()) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      proxy.cut(); // a closed port: connections are refused
      long t0 = System.nanoTime();
      Meshplane app = cluster.launch(0, db.url("127.0.0.1", proxy.port()), Map.of());
      int port = app.coordinatorPort();
      assertEquals(200, http.get(port, "/healthz").statusCode());
      System.out.println("probes served " + (System.nanoTime() - t0) / 1_000_000 + " ms after the launch began");
      // until the first attempt has failed, the check says "connecting to PostgreSQL"; then each round
      // follows one more failed attempt (1 s, then 2 s apart): the replica keeps trying and keeps answering
      int attempt = 0;
      for (int i = 0; i < 3; i++) {
        int before = attempt;
        attempt = Await.until("a failed attempt to reach PostgreSQL after attempt " + before, 20_000,
            () -> attemptOf(http.get(port, "/readyz").bodyAsString()), n -> n > before);
        assertEquals(200, http.get(port, "/healthz").statusCode());
        assertEquals(200, http.get(app.panelPort(), "/healthz").statusCode());
        HttpResponse<Buffer> ready = http.get(port, "/readyz");
        assertEquals(503, ready.statusCode());
        JsonObject postgres = ready.bodyAsJsonObject().getJsonObject("checks").getJsonObject("postgres");
        assertEquals("DOWN", postgres.getString("status"));
        assertTrue(postgres.getString("reason").contains("not reachable"), postgres.encode());
        assertEquals("UP", ready.bodyAsJsonObject().getJsonObject("checks").getJsonObject("cluster").getString("status"));
        // the manifests' probe leaves postgres out, but a replica that never reached it serves no API yet: not ready
        HttpResponse<Buffer> probe = http.get(port, "/readyz?exclude=postgres");
        assertEquals(503, probe.statusCode(), probe.bodyAsString());
        assertEquals("DOWN", probe.bodyAsJsonObject().getJsonObject("checks").getJsonObject("deployment").getString("status"));
        HttpResponse<Buffer> api = http.get(port, "/v1/auth/whoami", "x.y.z");
        assertEquals(503, api.statusCode(), "the API waits for PostgreSQL: " + api.bodyAsString());
        assertEquals("unavailable", api.bodyAsJsonObject().getString("code"));
        assertEquals("5", api.getHeader("Retry-After"));
        assertEquals(200, http.get(port, "/v1/openapi.yaml").statusCode(), "the API's description needs no database");
        String metrics = http.get(port, "/metrics").bodyAsString();
        for (String family : new String[] {"mesh_node_heartbeats_total", "mesh_nodes{", "mesh_writebehind_backlog",
            "mesh_writebehind_quarantined_rows", "mesh_writebehind_quarantined_total", "hazelcast_cluster_members"}) {
          assertTrue(metrics.contains("\n" + family), "OPERATIONS.md: every family is there from the start; missing " + family);
        }
      }
      assertTrue(!app.started().isComplete());

      proxy.restore();
      app.started().await(60, TimeUnit.SECONDS);
      Await.until("/readyz 200", 30_000, () -> http.get(port, "/readyz"), r -> r.statusCode() == 200);
      String root = Tokens.admin(app);
      assertEquals(200, http.get(port, "/v1/auth/whoami", root).statusCode(), "the same replica serves its API, no restart");
      assertEquals(200, http.get(port, "/v1/nodes", root).statusCode());
    }
  }

  @Test
  void wrongCredentialsOrAMissingDatabaseStopTheStartNamingTheSetting() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      String[] urls = {
          "postgresql://no_such_role@" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/" + db.name(),
          "postgresql://" + TestDatabase.USER + "@" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/no_such_database_here"};
      for (int i = 0; i < urls.length; i++) {
        Meshplane app = cluster.launch(i, urls[i], Map.of());
        assertEquals(200, http.get(app.coordinatorPort(), "/healthz").statusCode());
        Throwable failure = null;
        try {
          app.started().await(60, TimeUnit.SECONDS);
        } catch (Exception e) {
          failure = e;
        }
        assertTrue(failure instanceof ConfigException, String.valueOf(failure));
        assertTrue(failure.getMessage().contains("postgres.url"), failure.getMessage());
        assertTrue(!failure.getMessage().contains(urls[i]), "the URL (which may hold a password) is not echoed");
        app.close();
      }
    }
  }

  /** The attempt number in the postgres check's reason ("not reachable yet (..., attempt n)"), 0 before the first failure. */
  static int attemptOf(String readyz) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("attempt (\\d+)").matcher(readyz);
    return m.find() ? Integer.parseInt(m.group(1)) : 0;
  }
}
