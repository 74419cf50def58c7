package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;

/**
 * The two log pages in a real Chromium: events newest first, a node going stale while the page is
 * open appears on top without a reload and without taking the focus; the audit log shows names beside
 * ids, addresses in their usual form (an old row's {@code 0:0:0:0:0:0:0:1} as {@code ::1}), details
 * collapsed until opened, and filters by actor name.
 */
@Timeout(300)
class LogsBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;

  @BeforeAll
  static void start() throws Exception {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    // nodes go stale 2 s after their last heartbeat: the test makes events by stopping to beat
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.stale_after", "2s",
        "writebehind.flush_interval", "200ms"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "reader", "admin", "*", "*");
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      // a row recorded before addresses were written in their usual form, with details
      st.execute("INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id, outcome, "
          + "source_ip, team, environment, details) VALUES ('ev_01m8000000000000000000old1', now() - interval '1 hour', 'user', "
          + "'usr_01m800000000000000000old1', 'old-timer', 'acl.update', 'acl', 'web/prod', 'success', '0:0:0:0:0:0:0:1', "
          + "'web', 'prod', '{\"old_version\": 1, \"new_version\": 2}')");
    }
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800);
    browser.signIn("/#/login", "reader", PanelSession.PASSWORD);
    browser.el("nav-events");
  }

  @AfterAll
  static void stop() {
    try {
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  @Test
  void eventsAreNewestFirstAndANewOneAppearsOnTopLiveWithoutTakingTheFocus() throws Exception {
    Nodes.Enrolled first = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "first-1", "web", "prod");
    beat(first);
    awaitEvent(first.id());
    browser.open("/#/events");
    browser.await("the first node's event listed", d -> rowNodes().contains(first.id()) ? true : null);
    ((JavascriptExecutor) browser.driver()).executeScript("window.meshplaneNotReloaded = true;");
    // focus the link of the first row, as a person reading it would
    WebElement link = browser.all("event-row").get(0).findElement(org.openqa.selenium.By.cssSelector("a"));
    ((JavascriptExecutor) browser.driver()).executeScript("arguments[0].focus();", link);

    Nodes.Enrolled second = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "second-1", "web", "prod");
    beat(second);
    awaitEvent(second.id());
    browser.await("the new event on top, by the live refresh", Duration.ofSeconds(30),
        d -> rowNodes().size() >= 2 && rowNodes().get(0).equals(second.id()) ? true : null);
    assertEquals(true, ((JavascriptExecutor) browser.driver()).executeScript("return window.meshplaneNotReloaded === true;"));
    assertEquals(true, ((JavascriptExecutor) browser.driver()).executeScript("return document.activeElement === arguments[0];", link),
        "the focused link keeps the focus");
    List<String> order = rowNodes();
    assertTrue(order.indexOf(second.id()) < order.indexOf(first.id()), "newest first: " + order);
    assertEquals("second-1", browser.all("event-node").get(0).findElement(org.openqa.selenium.By.cssSelector("a")).getText());
    browser.screenshot("logs-events");
    assertAccessible("events");

    // the other order and the node name (whole, not a prefix) are filters kept in the hash
    new org.openqa.selenium.support.ui.Select(browser.el("events-filter-order")).selectByValue("oldest");
    browser.await("oldest first", d -> rowNodes().size() >= 2 && rowNodes().indexOf(first.id()) < rowNodes().indexOf(second.id()) ? true : null);
    assertTrue(browser.driver().getCurrentUrl().contains("order=oldest"), browser.driver().getCurrentUrl());
    browser.type("events-filter-node_name", "first");
    browser.el("events-filter-apply").click();
    browser.await("a prefix matches no event", d -> browser.driver().getCurrentUrl().contains("node_name=first")
        && !browser.driver().getCurrentUrl().contains("node_name=first-1") && rowNodes().isEmpty() ? true : null);
    browser.type("events-filter-node_name", "first-1");
    browser.el("events-filter-apply").click();
    browser.await("only first-1's events", d -> rowNodes().stream().allMatch(first.id()::equals) && !rowNodes().isEmpty() ? true : null);
    assertTrue(browser.driver().getCurrentUrl().contains("node_name=first-1"), browser.driver().getCurrentUrl());
  }

  @Test
  void theAuditLogNamesActorsAndTargetsShowsUsualAddressesCollapsesDetailsAndFiltersByName() throws Exception {
    HttpResponse<Buffer> created = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/auth/tokens", cluster.admin(), new JsonObject()
        .put("name", "nightly-backup").put("scope", new JsonObject().put("team", "web").put("environment", "prod").put("surface", "pipeline"))
        .put("expires", Instant.now().plus(Duration.ofDays(2)).toString()));
    assertEquals(201, created.statusCode(), created.bodyAsString());
    String tokenId = created.bodyAsJsonObject().getString("id");

    browser.open("/#/audit");
    WebElement create = browser.await("the token.create row", d -> row("token.create"));
    String target = create.findElement(Browser.test("audit-target")).getText();
    assertTrue(target.contains("nightly-backup") && target.contains(tokenId), "name beside the id: " + target);
    WebElement login = browser.await("the reader's login", d -> row("session.login"));
    String actor = login.findElement(Browser.test("audit-actor")).getText();
    assertTrue(actor.contains("reader") && actor.contains("usr_"), "name beside the id: " + actor);

    WebElement old = browser.await("the old row", d -> row("acl.update"));
    assertEquals("::1", old.findElement(Browser.test("audit-source-ip")).getText());
    WebElement details = old.findElement(Browser.test("audit-details"));
    assertNull(details.getAttribute("open"), "details collapsed");
    WebElement json = details.findElement(org.openqa.selenium.By.cssSelector("pre"));
    assertFalse(json.isDisplayed());
    details.findElement(org.openqa.selenium.By.cssSelector("summary")).click();
    browser.await("the details opened", d -> json.isDisplayed() ? true : null);
    assertTrue(json.getText().contains("\"new_version\": 2"), json.getText());
    ((JavascriptExecutor) browser.driver()).executeScript("window.scrollTo(0, 0);");
    browser.screenshot("logs-audit");
    assertAccessible("audit");

    // the actor name, whole: a prefix matches nothing, the name leaves only old-timer's row
    browser.type("audit-filter-actor_name", "old-");
    browser.el("audit-filter-apply").click();
    browser.await("a prefix matches no row", d -> browser.driver().getCurrentUrl().contains("actor_name=old-")
        && browser.all("audit-row").isEmpty() ? true : null);
    browser.type("audit-filter-actor_name", "old-timer");
    browser.el("audit-filter-apply").click();
    browser.await("only old-timer's rows", d -> {
      List<WebElement> rows = browser.all("audit-row");
      return !rows.isEmpty() && rows.stream().allMatch(r -> "ev_01m8000000000000000000old1".equals(attr(r, "data-event-id"))) ? true : null;
    });
    assertTrue(browser.driver().getCurrentUrl().contains("actor_name=old-timer"), browser.driver().getCurrentUrl());
    browser.el("audit-filter-clear").click();
    browser.await("every row back", d -> browser.all("audit-row").size() > 1 ? true : null);
    List<String> severe = browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList();
    assertEquals(List.of(), severe);
  }

  /** No serious or critical axe-core violation on the page shown. */
  static void assertAccessible(String page) {
    List<String> bad = new com.deque.html.axecore.selenium.AxeBuilder().analyze(browser.driver()).getViolations().stream()
        .filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact()))
        .map(v -> v.getId() + " (" + v.getImpact() + ", " + v.getNodes().size() + " elements)").toList();
    assertEquals(List.of(), bad, "axe on the " + page + " page");
  }

  private static void beat(Nodes.Enrolled n) {
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(1))
        .statusCode());
  }

  /** Waits for the node.stale event of a node that stopped beating. */
  private static void awaitEvent(String nodeId) {
    io.meshplane.testing.Await.until(nodeId + " stale", 20_000,
        () -> http.get(app.coordinatorPort(), "/v1/events?node_id=" + nodeId, cluster.admin()).bodyAsJsonObject().getJsonArray("items").size(),
        n -> n >= 1);
  }

  private static List<String> rowNodes() {
    try {
      return browser.all("event-row").stream().map(r -> attr(r, "data-node-id")).toList();
    } catch (StaleElementReferenceException refreshed) {
      return List.of();
    }
  }

  private static WebElement row(String action) {
    return browser.all("audit-row").stream().filter(r -> action.equals(attr(r, "data-action"))).findFirst().orElse(null);
  }

  private static String attr(WebElement e, String name) {
    try {
      String v = e.getAttribute(name);
      return v == null ? "" : v;
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }
}
