package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.deque.html.axecore.results.Results;
import com.deque.html.axecore.results.Rule;
import com.deque.html.axecore.selenium.AxeBuilder;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;

/**
 * The Nodes page in a real headless Chromium against a real replica: sort by name (both ways), find
 * a node by its mesh address and by a prefix, see the total, select two nodes and re-tag them in bulk
 * with per-node results, select "all 26 matching the filter" from a page of 25 and re-key them, and a
 * stale node's relay and policy sync shown as "unknown since" (in the inventory and on the node
 * page), never as the last known "connected" / "current". No serious or critical axe violation.
 */
@Timeout(240)
class InventoryBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static List<Nodes.Enrolled> nodes = new ArrayList<>();

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.stale_after", "3s",
        "relays", "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"}]"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "wide", "admin", "*", "*");
    for (String name : List.of("delta-2", "alpha-1", "charlie-3", "bravo-4")) {
      nodes.add(Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), name, name.startsWith("a") || name.startsWith("b") ? "web" : "db", "prod"));
    }
    // alpha-1 beats once, reporting its relay (connected), then falls silent: stale after 3 s
    Nodes.Enrolled alpha = nodes.get(1);
    HttpResponse<Buffer> beat = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + alpha.id() + "/heartbeat", alpha.token(),
        Nodes.beat(1).put("relay", alpha.node().getString("relay")));
    assertEquals(200, beat.statusCode(), beat.bodyAsString());
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1360, 900);
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  static List<String> names() {
    try {
      return browser.all("node-link").stream().map(WebElement::getText).toList();
    } catch (StaleElementReferenceException refreshed) {
      return List.of();
    }
  }

  static String text(WebElement row, String test) {
    try {
      List<WebElement> found = row.findElements(Browser.test(test));
      return found.isEmpty() ? "" : found.get(0).getText();
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }

  static WebElement row(String id) {
    return browser.driver().findElements(By.cssSelector("[data-test='node-row'][data-node-id='" + id + "']")).stream().findFirst().orElse(null);
  }

  @Test
  void sortSearchSelectAndRetagInBulk() throws Exception {
    browser.signIn("/", "wide", PanelSession.PASSWORD);
    browser.el("nav-nodes").click();
    browser.await("four nodes", d -> names().size() == 4 ? true : null);
    assertEquals("4 nodes", browser.el("nodes-total").getText());
    // a wide user sees the team and environment columns and filters
    browser.el("nodes-filter-team");
    browser.el("nodes-filter-environment");
    assertEquals(4, browser.all("node-row-team").size());

    // sort by name, then the other way
    browser.el("nodes-sort-name").click();
    browser.await("sorted by name", d -> names().equals(List.of("alpha-1", "bravo-4", "charlie-3", "delta-2")) ? true : null);
    WebElement th = browser.el("nodes-sort-name").findElement(By.xpath(".."));
    assertEquals("ascending", th.getAttribute("aria-sort"));
    assertTrue(browser.driver().getCurrentUrl().contains("sort=name"), browser.driver().getCurrentUrl());
    browser.el("nodes-sort-name").click();
    browser.await("sorted by name, descending", d -> names().equals(List.of("delta-2", "charlie-3", "bravo-4", "alpha-1")) ? true : null);
    assertEquals("descending", browser.el("nodes-sort-name").findElement(By.xpath("..")).getAttribute("aria-sort"));
    // the heartbeat and status orders cost a scan and a count: refreshed every 30 s there, and the page says so
    assertEquals(1, browser.all("nodes-refresh-note").size());
    assertFalse(browser.all("nodes-refresh-note").get(0).isDisplayed(), "name order: the usual 5 s, no note");
    browser.el("nodes-sort-heartbeat").click();
    browser.await("the slower refresh stated", d -> "refreshed every 30 s in this order".equals(browser.el("nodes-refresh-note").getText()) ? true : null);
    browser.el("nodes-sort-name").click();
    browser.await("name order: the note gone", d -> browser.all("nodes-refresh-note").get(0).isDisplayed() ? null : true);

    // a stale node: its relay and policy sync are unknown since its last heartbeat, in a neutral badge
    String alphaId = nodes.get(1).id();
    browser.await("alpha-1 stale", d -> {
      WebElement r = row(alphaId);
      return r != null && "stale".equals(r.getAttribute("data-status")) && text(r, "node-row-relay").startsWith("unknown since") ? true : null;
    });
    WebElement stale = row(alphaId);
    assertTrue(text(stale, "node-row-sync").startsWith("unknown since"), text(stale, "node-row-sync"));
    assertTrue(stale.findElement(Browser.test("node-row-relay")).getAttribute("class").contains("badge-neutral"));

    // search by mesh address, then by a prefix
    String address = nodes.get(2).node().getString("address").replace("/32", "");
    browser.type("nodes-filter-address", address);
    browser.el("nodes-filter-apply").click();
    browser.await("only charlie-3", d -> names().equals(List.of("charlie-3")) ? true : null);
    assertEquals("1 node", browser.el("nodes-total").getText());
    browser.type("nodes-filter-address", "100.64.0.1/24"); // host bits set: the field is refused
    browser.el("nodes-filter-apply").click();
    browser.await("the address refused", d -> browser.el("nodes-filter-error").getText().contains("address") ? true : null);
    browser.type("nodes-filter-address", "100.64.0.0/24");
    browser.el("nodes-filter-apply").click();
    browser.await("every node in the /24", d -> names().size() == 4 ? true : null);
    browser.screenshot("inventory-nodes");

    // select two nodes and re-tag them in bulk
    String bravoId = nodes.get(3).id();
    String deltaId = nodes.get(0).id();
    browser.driver().findElement(By.cssSelector("[data-test='node-select'][data-node-id='" + bravoId + "']")).click();
    browser.driver().findElement(By.cssSelector("[data-test='node-select'][data-node-id='" + deltaId + "']")).click();
    assertEquals("2 nodes selected", browser.el("bulk-count").getText());
    browser.type("bulk-tags", "web canary");
    browser.el("bulk-retag").click();
    String question = browser.el("confirm-dialog").getText();
    assertTrue(question.contains("2 nodes"), question);
    browser.el("confirm-ok").click();
    browser.await("two results", d -> browser.all("bulk-result-row").size() == 2 ? true : null);
    for (WebElement r : browser.all("bulk-result-row")) assertEquals("ok", r.getAttribute("data-outcome"));
    assertTrue(browser.el("bulk-summary").getText().contains("2 of 2"), browser.el("bulk-summary").getText());
    browser.screenshot("inventory-bulk");
    for (String id : List.of(bravoId, deltaId)) {
      JsonObject n = http.get(app.coordinatorPort(), "/v1/nodes/" + id, cluster.admin()).bodyAsJsonObject();
      assertEquals(new JsonArray().add("tag:web").add("tag:canary"), n.getJsonArray("tags"));
    }
    assertEquals(new JsonArray().add("tag:test"),
        http.get(app.coordinatorPort(), "/v1/nodes/" + alphaId, cluster.admin()).bodyAsJsonObject().getJsonArray("tags"));

    // "select all on this page" offers no "all matching" when the page holds them all
    browser.el("nodes-select-page").click();
    assertEquals("4 nodes selected", browser.el("bulk-count").getText());
    assertTrue(!browser.el("bulk-clear").isSelected());
    browser.el("bulk-clear").click();

    Results axe = new AxeBuilder().analyze(browser.driver());
    List<String> serious = new ArrayList<>();
    for (Rule v : axe.getViolations()) {
      if ("serious".equals(v.getImpact()) || "critical".equals(v.getImpact())) serious.add(v.getId() + ": " + v.getHelp());
    }
    assertEquals(List.of(), serious);
    browser.screenshot("inventory-nodes-bulk-results");

    // "all N matching the filter": 26 more nodes, a page of 25, the whole page ticked, then every match re-keyed by the filter
    for (int i = 0; i < 26; i++) {
      Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), String.format("fleet-%02d", i), "web", "prod");
    }
    browser.open("/#/nodes?name_prefix=fleet-&limit=25");
    browser.await("a page of 25 fleet nodes", d -> names().size() == 25 ? true : null);
    browser.await("the total", d -> browser.el("nodes-total").getText().equals("26 nodes") ? true : null);
    browser.el("nodes-select-page").click();
    assertEquals("25 nodes selected", browser.el("bulk-count").getText());
    browser.el("bulk-select-all").click();
    assertEquals("All 26 nodes matching the filter selected", browser.el("bulk-count").getText());
    // a 27th match appears after the page was shown: the dialog's count is the dry run's, not the page's total
    Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "fleet-26", "web", "prod");
    browser.el("bulk-rekey").click();
    browser.await("the dry run's answer in the dialog", d -> browser.all("bulk-confirm-resolved").isEmpty() ? null : true);
    assertEquals("27", browser.el("bulk-confirm-resolved").getAttribute("data-count"));
    assertTrue(browser.el("bulk-confirm-resolved").getText().contains("fleet-00"), browser.el("bulk-confirm-resolved").getText());
    assertTrue(browser.el("confirm-dialog").getText().contains("27 nodes"), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    browser.await("27 results", d -> browser.all("bulk-result-row").size() == 27 ? true : null);
    for (WebElement r : browser.all("bulk-result-row")) assertEquals("ok", r.getAttribute("data-outcome"));
    assertTrue(browser.el("bulk-summary").getText().contains("27 of 27"), browser.el("bulk-summary").getText());
    // the server saw a dry run by the filter, then the action by the ids it resolved
    assertEquals(List.of("true filter 27", "false ids 27"), lastBulks(2));

    // the node page says the same of the stale node
    browser.open("/#/nodes/" + alphaId);
    browser.await("the node page's relay status", d -> browser.el("node-relay-status").getText().startsWith("unknown since") ? true : null);
    assertTrue(browser.el("node-policy-sync-state").getText().startsWith("unknown since"));
    // the 401 before the login and the refused address are answers, not script errors
    assertEquals(List.of(), browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList());
  }

  /** The last {@code n} bulk audit events, oldest first: "dry_run by nodes". */
  static List<String> lastBulks(int n) throws Exception {
    List<String> out = new ArrayList<>();
    try (java.sql.Connection c = cluster.db().connect(); java.sql.Statement st = c.createStatement();
         java.sql.ResultSet rs = st.executeQuery("SELECT details->>'dry_run', details->>'by', details->>'nodes' FROM audit_events"
             + " WHERE action = 'node.bulk' ORDER BY at DESC, id DESC LIMIT " + n)) {
      while (rs.next()) out.add(0, rs.getString(1) + " " + rs.getString(2) + " " + rs.getString(3));
    }
    return out;
  }
}
