package io.meshplane.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.PgProxy;
import io.meshplane.testing.RawHttp;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.IOException;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * /readyz follows PostgreSQL: 503 naming it while unreachable, 200 again once it is back; /healthz stays 200. The probes
 * answer HEAD too.
 */
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
    assertEquals(503, head(port, "/readyz").status(), "HEAD answers as GET does");

    proxy.restore();
    HttpResponse<Buffer> up = awaitReadyz(port, r -> r.statusCode() == 200);
    assertEquals("UP", up.bodyAsJsonObject().getJsonObject("checks").getJsonObject("postgres").getString("status"));
  }

  /**
   * Load balancers and uptime checkers that probe with HEAD get GET's status and headers and no body,
   * on both ports; other methods stay 405.
   */
  @Test
  void theProbesAnswerHeadLikeGetWithoutABody() throws Exception {
    Meshplane app = cluster.start(0);
    for (int port : new int[] {app.coordinatorPort(), app.panelPort()}) {
      for (String path : new String[] {"/healthz", "/readyz", "/metrics"}) {
        HttpResponse<Buffer> get = http.get(port, path);
        assertEquals(200, get.statusCode(), port + path);
        RawHttp.Answer head = head(port, path);
        assertEquals(200, head.status(), port + path + " " + head.head());
        assertEquals("", head.body(), port + path);
        assertEquals(get.getHeader("Content-Type"), head.header("Content-Type"), port + path);
        assertTrue(head.header("X-Request-Id") != null, head.head());
      }
      assertEquals(200, head(port, "/readyz?exclude=cluster").status());
      assertEquals(405, RawHttp.exchange(port, RawHttp.ascii("DELETE /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).status());
    }
  }

  /** A HEAD request on the wire; the server closes after its answer, so whatever follows the head is a body it sent. */
  private static RawHttp.Answer head(int port, String path) throws IOException {
    return RawHttp.exchange(port, RawHttp.ascii("HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  }

  private HttpResponse<Buffer> awaitReadyz(int port, Predicate<HttpResponse<Buffer>> condition) {
    return Await.until("/readyz reaches the expected state", 30_000, () -> http.get(port, "/readyz"), condition);
  }
}
