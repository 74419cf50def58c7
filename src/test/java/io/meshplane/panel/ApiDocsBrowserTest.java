package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.http.Dashboard;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * The API documentation page: Swagger UI (from its WebJar) renders the operations of the OpenAPI
 * document the panel serves, under the dashboard's strict Content-Security-Policy with no console error,
 * and "Try it out" goes through the signed-in person's session: a read of a {@code /v1} operation is
 * answered by its {@code /api/v1} mirror, and a change carries the CSRF token (a 403 {@code csrf_failed}
 * otherwise).
 */
@Timeout(300)
class ApiDocsBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "docs", "admin", "*", "*");
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 900);
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  @Test
  void thePanelServesTheDocumentAndThePageUnderTheDashboardsPolicy() {
    HttpResponse<Buffer> doc = http.get(app.panelPort(), Dashboard.OPENAPI);
    assertEquals(200, doc.statusCode());
    assertEquals("application/yaml", doc.getHeader("Content-Type"));
    assertEquals(http.get(app.coordinatorPort(), "/v1/openapi.yaml").bodyAsString(), doc.bodyAsString(), "the coordinator's document");
    assertEquals(400, http.get(app.panelPort(), Dashboard.OPENAPI + "?x=1").statusCode(), "no query parameter");
    HttpResponse<Buffer> page = http.get(app.panelPort(), "/api-docs.html");
    assertEquals(200, page.statusCode());
    assertEquals(Dashboard.CSP, page.getHeader("Content-Security-Policy"), "the same strict policy as every dashboard file");
    assertTrue(!page.bodyAsString().contains("<script>") && !page.bodyAsString().contains("style="), "no inline script or style");
  }

  @Test
  void swaggerUiRendersTheDocumentAndTriesOperationsThroughTheSession() {
    // signed in on the dashboard, then to the page by its nav link
    browser.signIn("/#/login", "docs", PanelSession.PASSWORD);
    browser.el("nav-api-docs").click();
    browser.await("the page", d -> d.getCurrentUrl().endsWith("/api-docs.html") ? true : null);
    WebElement listNodes = browser.await("GET /v1/nodes rendered from the document", Duration.ofSeconds(30),
        d -> d.findElements(By.id("operations-Nodes-listNodes")).stream().findFirst().orElse(null));
    assertTrue(listNodes.getText().contains("/v1/nodes"), listNodes.getText());
    assertTrue(browser.all("api-docs").get(0).findElements(By.cssSelector(".opblock")).size() > 30, "every operation listed");
    browser.await("the session named", d -> browser.el("api-docs-session").getText().contains("Signed in as docs") ? true : null);
    browser.screenshot("api-docs");

    // a read: GET /v1/nodes is sent to /api/v1/nodes with the session cookie
    String status = execute("operations-Nodes-listNodes");
    assertEquals("200", status, "GET /api/v1/nodes through the session");
    assertTrue(responseUrl("operations-Nodes-listNodes").contains("/api/v1/nodes"), responseUrl("operations-Nodes-listNodes"));

    // a change: POST /v1/acl/preview (it saves nothing) carries the CSRF token: anything but 401 and 403
    String preview = execute("operations-Policy-previewPolicy");
    assertTrue(!preview.equals("403") && !preview.equals("401"), "the preview went through the session with its CSRF token: " + preview);
    browser.screenshot("api-docs-tried");
    // the opened operations, their forms and answers pass axe too (AccessibilityBrowserTest checks the page closed)
    List<String> axe = new java.util.ArrayList<>(AccessibilityBrowserTest.violations(browser, "api-docs (tried) [light]"));
    AccessibilityBrowserTest.scheme(browser, "dark");
    browser.await("Swagger UI's dark styles", d -> browser.driver().findElement(By.tagName("html")).getAttribute("class").contains("dark-mode")
        ? true : null);
    browser.screenshot("api-docs-tried-dark");
    axe.addAll(AccessibilityBrowserTest.violations(browser, "api-docs (tried) [dark]"));
    assertEquals(List.of(), axe, "axe-core violations of impact serious or critical:\n" + String.join("\n", axe));

    // no script error and no CSP violation (a refused request's "Failed to load resource" is not one)
    List<String> severe = browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList();
    assertEquals(List.of(), severe);
  }

  /** Opens an operation, Try it out, Execute: the status code of the live answer. */
  private static String execute(String operation) {
    WebElement op = browser.driver().findElement(By.id(operation));
    op.findElement(By.cssSelector(".opblock-summary-control")).click();
    browser.await("Try it out of " + operation, d -> {
      op.findElement(By.cssSelector(".try-out__btn")).click();
      return true;
    });
    browser.await("Execute of " + operation, d -> {
      op.findElement(By.cssSelector(".execute")).click();
      return true;
    });
    return browser.await("the answer to " + operation, Duration.ofSeconds(30), d -> {
      List<WebElement> cells = op.findElements(By.cssSelector(".live-responses-table .response .response-col_status"));
      return cells.isEmpty() || cells.get(0).getText().isBlank() ? null : cells.get(0).getText().trim();
    });
  }

  private static String responseUrl(String operation) {
    return browser.driver().findElement(By.id(operation)).findElement(By.cssSelector(".request-url")).getText();
  }
}
