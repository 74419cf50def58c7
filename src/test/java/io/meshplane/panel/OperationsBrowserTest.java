package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.deque.html.axecore.results.Results;
import com.deque.html.axecore.results.Rule;
import com.deque.html.axecore.selenium.AxeBuilder;
import io.meshplane.access.Surface;
import io.meshplane.agent.NodeAgent;
import io.meshplane.agent.TestAgents;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The Operations page (#/operations) in a real headless Chromium against a real replica: operations
 * requested through the API against a real reference agent (which carries out a relay move) and a
 * node that never sends a heartbeat (whose operations stay pending) are listed newest first; the
 * overview's "Operations in flight" card opens the page filtered to the open ones; the status filter
 * narrows the table and lands in the hash; a new operation shows up, and another one's status moves,
 * by the live refresh without a reload; a node link opens the node's page; and axe-core finds no
 * serious or critical accessibility violation on the page.
 */
@Timeout(300)
class OperationsBrowserTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static NodeAgent agent;
  static Path agentDir;

  @BeforeAll
  static void start() throws Exception {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    // plain http on loopback: the cookie cannot be Secure; the agent beats every second so its operations complete quickly
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.interval", "1s", "relays", RELAYS));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "opsadmin", "admin", "*", "*");
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800);
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (agent != null) agent.close();
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  @Test
  void aPersonWatchesTheFleetsOperations() throws Exception {
    String admin = cluster.admin();
    // a real agent, and a node that never beats
    agentDir = Files.createTempDirectory("operations-agent-");
    agent = TestAgents.start("http://127.0.0.1:" + app.coordinatorPort(), Tokens.issue(app, "team-o", "prod", Surface.ENROLLMENT).jwt(),
        "agent-o", List.of("tag:db"), agentDir.resolve("state"));
    String agentId = awaitOnline("agent-o");
    Nodes.Enrolled silent = Nodes.enroll(http, app.coordinatorPort(), admin, "silent-o", "team-o", "prod");

    // the agent's relay move succeeds; the silent node's re-key stays pending
    String from = node(agentId).getString("relay");
    String to = "fra1".equals(from) ? "ams1" : "fra1";
    String move = accepted(HttpMethod.PUT, "/v1/nodes/" + agentId + "/relay", new JsonObject().put("relay", to));
    String rekey = accepted(HttpMethod.POST, "/v1/nodes/" + silent.id() + "/rekey", null);
    Await.until("the move succeeded", 30_000, () -> operation(move).getString("status"), "succeeded"::equals);

    // sign in; the overview's card opens the page with the open operations only
    login();
    browser.el("overview-ops").click();
    browser.await("the operations page filtered to open ones", d -> d.getCurrentUrl().endsWith("#/operations?status=open") ? true : null);
    assertEquals("open", new Select(browser.el("operations-filter-status")).getFirstSelectedOption().getAttribute("value"));
    browser.el("operations-table");
    browser.await("the pending re-key listed", d -> status(rekey).equals("pending") ? true : null);
    assertTrue(rows().stream().noneMatch(r -> attr(r, "data-op-id").equals(move)), "the succeeded move is not open");
    assertEquals("page", browser.el("nav-operations").getAttribute("aria-current"), "the nav marks the page");

    // a new operation shows up by the live refresh, without a reload
    ((JavascriptExecutor) browser.driver()).executeScript("window.meshplaneNotReloaded = true;");
    String silentMove = accepted(HttpMethod.PUT, "/v1/nodes/" + silent.id() + "/relay",
        new JsonObject().put("relay", "fra1".equals(silent.node().getString("relay")) ? "ams1" : "fra1"));
    browser.await("the new operation listed live", Duration.ofSeconds(20), d -> status(silentMove).equals("pending") ? true : null);
    List<String> order = rows().stream().map(r -> attr(r, "data-op-id")).toList();
    assertEquals(List.of(silentMove, rekey), order, "newest first");
    assertNotReloaded();

    // every status: the filter cleared, the succeeded move is back; the status filter narrows again
    browser.el("operations-filter-clear").click();
    browser.await("every operation listed", d -> status(move).equals("succeeded") ? true : null);
    assertTrue(!browser.driver().getCurrentUrl().contains("status="), browser.driver().getCurrentUrl());
    WebElement moveRow = row(move);
    assertEquals("move_relay", attr(moveRow, "data-op-kind"));
    assertTrue(moveRow.getText().contains(from + " → " + to), moveRow.getText());
    new Select(browser.el("operations-filter-status")).selectByValue("succeeded");
    browser.await("only the succeeded move", d -> rows().size() == 1 && status(move).equals("succeeded") ? true : null);
    assertTrue(browser.driver().getCurrentUrl().endsWith("#/operations?status=succeeded"), browser.driver().getCurrentUrl());
    new Select(browser.el("operations-filter-status")).selectByValue("");
    browser.await("every operation listed again", d -> rows().size() == 3 ? true : null);

    // an operation's status moves live: the agent re-keys itself while the page is shown
    String agentRekey = accepted(HttpMethod.POST, "/v1/nodes/" + agentId + "/rekey", null);
    browser.await("the agent's re-key listed as succeeded", Duration.ofSeconds(45), d -> status(agentRekey).equals("succeeded") ? true : null);
    assertNotReloaded();
    ((JavascriptExecutor) browser.driver()).executeScript("document.activeElement.blur();");
    browser.screenshot("operations");
    assertEquals(List.of(), accessibility(), "serious or critical accessibility violations on #/operations");

    // a node filter from the hash, then the node's link opens its page
    browser.open("/#/operations?node_id=" + silent.id());
    browser.await("the silent node's two operations", d -> rows().size() == 2 ? true : null);
    assertEquals(silent.id(), browser.el("operations-filter-node_id").getAttribute("value"));
    browser.await("the node link clicked", d -> {
      row(rekey).findElement(Browser.test("operation-node-link")).click();
      return true;
    });
    browser.await("the node's page", d -> browser.el("node-field-id").getText().equals(silent.id()) ? true : null);

    // a bad filter is shown under the filters, naming the field
    browser.open("/#/operations?node_id=web-1");
    browser.await("the filter error", d -> browser.el("operations-filter-error").getText().contains("node_id") ? true : null);

    List<String> severe = browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList();
    assertEquals(List.of(), severe, "no script error and no CSP violation");
  }

  private static void login() {
    browser.signIn("/", "opsadmin", PanelSession.PASSWORD);
    browser.await("the overview's numbers", d -> browser.el("overview-ops").getAttribute("data-value") != null ? true : null);
  }

  private static void assertNotReloaded() {
    assertEquals(true, ((JavascriptExecutor) browser.driver()).executeScript("return window.meshplaneNotReloaded === true;"),
        "the page was not reloaded");
  }

  /** Serious and critical axe-core violations of the page as shown, as "rule: where". */
  private static List<String> accessibility() {
    Results results = new AxeBuilder().analyze(browser.driver());
    return results.getViolations().stream().filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact()))
        .map(OperationsBrowserTest::describe).toList();
  }

  private static String describe(Rule v) {
    return v.getId() + ": " + v.getNodes().stream().map(n -> String.valueOf(n.getTarget())).toList();
  }

  /** Requests an operation through the coordinator API; its id. */
  private static String accepted(HttpMethod method, String path, JsonObject body) {
    HttpResponse<Buffer> r = http.send(method, app.coordinatorPort(), path, cluster.admin(), body);
    assertEquals(202, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getString("id");
  }

  private static JsonObject operation(String id) {
    return http.get(app.coordinatorPort(), "/v1/operations/" + id, cluster.admin()).bodyAsJsonObject();
  }

  private static JsonObject node(String id) {
    return http.get(app.coordinatorPort(), "/v1/nodes/" + id, cluster.admin()).bodyAsJsonObject();
  }

  private static List<WebElement> rows() {
    return browser.all("operation-row");
  }

  private static WebElement row(String opId) {
    return browser.driver().findElements(By.cssSelector("[data-test='operation-row'][data-op-id='" + opId + "']")).stream()
        .findFirst().orElse(null);
  }

  /** The status the table shows for the operation, "" while it is not listed. */
  private static String status(String opId) {
    try {
      WebElement r = row(opId);
      return r == null ? "" : attr(r, "data-op-status");
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }

  private static String attr(WebElement e, String name) {
    try {
      String v = e.getAttribute(name);
      return v == null ? "" : v;
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }

  /** The id of the node named {@code name} once the agent has enrolled it and it is online. */
  private static String awaitOnline(String name) {
    JsonArray items = Await.until(name + " enrolled and sent a heartbeat", 30_000,
        () -> http.get(app.coordinatorPort(), "/v1/nodes?name_prefix=" + name, cluster.admin()).bodyAsJsonObject().getJsonArray("items"),
        page -> online(page, name) != null);
    return online(items, name);
  }

  private static String online(JsonArray items, String name) {
    for (Object o : items) {
      JsonObject n = (JsonObject) o;
      if (name.equals(n.getString("name")) && "online".equals(n.getString("status"))) return n.getString("id");
    }
    return null;
  }
}
