package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Behind a trusted proxy (here: the test itself on 127.0.0.1), X-Forwarded-For names the client: the
 * login lockout is per client address, and the audit trail records the client, not the proxy.
 */
@Timeout(120)
class ProxiedClientTest {
  @Test
  void theForwardedClientIsLimitedAndAuditedOnItsOwn() {
    try (TestCluster cluster = TestCluster.started(1, Map.of("http.trusted_proxies", "127.0.0.1/32"))) {
      Meshplane app = cluster.replica(0);
      Http http = cluster.http();
      PanelSession.user(app, "root", "admin", "*", "*");
      for (int i = 0; i < 5; i++) assertEquals(401, login(http, app, "198.51.100.7", "wrong password").statusCode());
      assertEquals(429, login(http, app, "198.51.100.7", PanelSession.PASSWORD).statusCode(), "locked for that client");
      assertEquals(200, login(http, app, "198.51.100.8", PanelSession.PASSWORD).statusCode(), "another client behind the same proxy");
      PanelSession root = PanelSession.signIn(http, app.panelPort(), "root");
      JsonArray events = root.get(app.panelPort(), "/api/v1/audit?action=session.login").bodyAsJsonObject().getJsonArray("items");
      assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(e -> "198.51.100.7".equals(e.getString("source_ip"))
          && "failed".equals(e.getString("outcome"))), events.encodePrettily());
      assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(e -> "198.51.100.8".equals(e.getString("source_ip"))
          && "success".equals(e.getString("outcome"))), events.encodePrettily());
    }
  }

  private static HttpResponse<Buffer> login(Http http, Meshplane app, String client, String password) {
    return http.send(http.request(HttpMethod.POST, app.panelPort(), "/api/v1/session").putHeader("X-Forwarded-For", client)
        .putHeader("Content-Type", "application/json"), new JsonObject().put("username", "root").put("password", password)
        .encode().getBytes());
  }
}
