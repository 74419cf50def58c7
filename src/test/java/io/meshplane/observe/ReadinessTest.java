package io.meshplane.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.PgProxy;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** /readyz follows PostgreSQL: 503 naming it while unreachable, 200 again once it is back; /healthz stays 200. */
@Timeout(120)
class ReadinessTest {
  TestCluster cluster = TestCluster.of(1);
  PgProxy proxy = new PgProxy();
  Http http = cluster.http();

  @AfterEach
  void stop() {
    cluster.close();
    proxy.close();
  }

  @Test
  void readyzIs503NamingPostgresWhileTheDatabaseIsUnreachableAndRecovers() throws Exception {
    Meshplane app = cluster.start(0, cluster.db().url("127.0.0.1", proxy.port()), Map.of());
    int port = app.coordinatorPort();
    assertEquals(200, http.get(port, "/readyz").statusCode());

    proxy.cut();
    HttpResponse<Buffer> down = awaitReadyz(port, r -> r.statusCode() == 503);
    JsonObject checks = down.bodyAsJsonObject().getJsonObject("checks");
    assertEquals("DOWN", down.bodyAsJsonObject().getString("status"));
    assertEquals("DOWN", checks.getJsonObject("postgres").getString("status"));
    assertTrue(checks.getJsonObject("postgres").getString("reason").contains("PostgreSQL"));
    assertEquals("UP", checks.getJsonObject("cluster").getString("status"), "only the failing check is named DOWN");
    assertEquals(200, http.get(port, "/healthz").statusCode(), "liveness does not depend on the database");
    assertEquals(503, http.get(app.panelPort(), "/readyz").statusCode(), "the panel reports the same");

    proxy.restore();
    HttpResponse<Buffer> up = awaitReadyz(port, r -> r.statusCode() == 200);
    assertEquals("UP", up.bodyAsJsonObject().getJsonObject("checks").getJsonObject("postgres").getString("status"));
  }

  private HttpResponse<Buffer> awaitReadyz(int port, Predicate<HttpResponse<Buffer>> condition) {
    return Await.until("/readyz reaches the expected state", 30_000, () -> http.get(port, "/readyz"), condition);
  }
}
