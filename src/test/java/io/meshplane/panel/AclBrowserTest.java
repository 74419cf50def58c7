package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;

/**
 * The ACL pages in a real headless Chromium against a real replica: the version line, the CodeMirror
 * editor (served from its WebJar under the strict CSP) with syntax and server errors marked at their
 * line, the diff of the editor against the stored version (formatting alone is no difference), the
 * fleet-wide impact beside the node preview, results cleared as soon as the editor changes, and on the
 * history page the diff of two versions, "compare with current", and a version loaded into the
 * editor after asking before it replaces edits.
 *
 * <p>The mesh: web-1, web-2 ({@code tag:web}) and db-1 ({@code tag:db}) in teams {@code acl} and
 * {@code hist}; version 2 of each policy: web -> db tcp/5432 and web -> web tcp/8080.
 */
@Timeout(300)
class AclBrowserTest {
  static final JsonObject WEB_DB = grant("tag:web", "tag:db", "tcp/5432");
  static final JsonObject WEB_WEB = grant("tag:web", "tag:web", "tcp/8080");
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
    PanelSession.user(app, "alice", "admin", "*", "*");
    for (String team : List.of("acl", "hist")) {
      for (String[] n : new String[][] {{"web-1", "tag:web"}, {"web-2", "tag:web"}, {"db-1", "tag:db"}}) {
        JsonObject body = new JsonObject().put("name", n[0]).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
            .put("tags", new JsonArray().add(n[1]));
        assertEquals(201, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes", cluster.admin(), body).statusCode());
      }
      put(team, new JsonObject().put("grants", new JsonArray().add(WEB_DB)));
      put(team, new JsonObject().put("grants", new JsonArray().add(WEB_DB).add(WEB_WEB)));
    }
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1000);
    browser.signIn("/", "alice", PanelSession.PASSWORD);
    browser.el("nav-acl");
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
  void theEditorDiffsMarksPreviewsTheFleetAndForgetsStaleAnswers() {
    browser.open("/#/acl?team=acl&environment=prod");
    WebElement line = browser.await("the version line", d -> browser.el("acl-version-line").getText().startsWith("Version 2") ? browser.el("acl-version-line") : null);
    assertTrue(line.getText().matches("Version 2 · stored .+ by .+"), line.getText());
    assertFalse(line.getText().contains("[object"), line.getText());
    assertEquals("2", browser.el("acl-version").getText());
    browser.el("acl-code"); // CodeMirror loaded from /vendor under the CSP
    // keyboard: the editor's input is labelled, and Tab leaves it for the next control (no trap)
    assertEquals("Policy JSON", browser.el("acl-code").findElement(By.cssSelector("textarea")).getAttribute("aria-label"));
    browser.el("acl-code").click();
    new Actions(browser.driver()).sendKeys(Keys.TAB).perform();
    assertEquals("acl-save", browser.driver().switchTo().activeElement().getAttribute("data-test"));
    new Actions(browser.driver()).keyDown(Keys.SHIFT).sendKeys(Keys.TAB).keyUp(Keys.SHIFT).perform();
    assertTrue(browser.driver().switchTo().activeElement().findElements(By.xpath("ancestor::*[@data-test='acl-code']")).size() == 1,
        "Shift+Tab comes back into the editor");
    // (the login page's probe of the session, a 401 before signing in, is the one expected entry)
    List<String> severe = browser.severeLogs().stream().filter(l -> !l.contains("/api/v1/session")).toList();
    assertTrue(severe.isEmpty(), "no script error, failed /vendor/ or /js/ file, or CSP violation: " + severe);

    // formatting and key order alone are no difference
    PolicyEditor.type(browser, "{\"tests\":[],\"grants\":[{\"ports\":[\"tcp/5432\"],\"dst\":[\"tag:db\"],\"src\":[\"tag:web\"]},"
        + "{\"dst\":[\"tag:web\"],\"src\":[\"tag:web\"],\"ports\":[\"tcp/8080\"]}]}");
    browser.el("acl-diff-toggle").click();
    browser.await("no differences", d -> browser.el("acl-diff-summary").getText().startsWith("No differences") ? true : null);
    // an edit: web -> web removed, icmp added to web -> db; the diff follows the editor
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\",\"icmp\"]}]}");
    browser.await("the diff of the edit", d -> browser.el("acl-diff-summary").getText().contains("added (+)") ? true : null);
    assertTrue(texts("acl-diff-add").stream().anyMatch(t -> t.contains("\"icmp\"")), texts("acl-diff-add").toString());
    assertTrue(texts("acl-diff-del").stream().anyMatch(t -> t.contains("\"tcp/8080\"")), texts("acl-diff-del").toString());
    assertTrue(texts("acl-diff-add").get(0).startsWith("+"), "a sign, not only a colour: " + texts("acl-diff-add"));
    assertEquals("ins", browser.all("acl-diff-add").get(0).getTagName());
    assertEquals("del", browser.all("acl-diff-del").get(0).getTagName());

    // the fleet-wide impact beside the one-node preview
    browser.el("acl-impact-submit").click();
    WebElement lost = browser.await("the impact", d -> browser.el("acl-impact-lost"));
    assertTrue(lost.getText().contains("2 nodes would lose peers (1 node pair)"), lost.getText());
    assertTrue(browser.el("acl-impact-gained").getText().contains("0 nodes would gain peers"), browser.el("acl-impact-gained").getText());
    assertEquals(List.of("tcp/8080"), browser.all("acl-impact-ports-lost-port").stream().map(e -> e.getAttribute("data-port")).toList());
    assertEquals(List.of("icmp"), browser.all("acl-impact-ports-gained-port").stream().map(e -> e.getAttribute("data-port")).toList());
    assertTrue(browser.el("acl-impact-ports-gained").getText().contains("icmp for 2 node pairs"), browser.el("acl-impact-ports-gained").getText());
    browser.type("acl-preview-node", "web-1");
    browser.el("acl-preview-submit").click();
    browser.await("the node preview", d -> browser.el("acl-preview-lost").getText().contains("web-2") ? true : null);
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 2200));
    browser.screenshot("acl");
    assertNoSeriousViolations("the policy page with a diff, an impact and a preview");
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 1000));

    // the next edit clears every answer given for the old text, and says so
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\"]}]}");
    browser.el("acl-results-stale");
    assertTrue(browser.all("acl-impact-lost").isEmpty() && browser.all("acl-preview-lost").isEmpty(), "old answers gone");
    assertFalse(browser.all("acl-impact-result").get(0).isDisplayed());
    // an old "tests pass" never sits beside a new failure
    PolicyEditor.type(browser, "{\"grants\":[" + WEB_DB.encode() + "],\"tests\":[{\"src\":\"web-1\",\"accept\":[\"db-1:tcp/5432\"]}]}");
    browser.el("acl-preview-submit").click();
    browser.await("the tests pass", d -> browser.el("acl-preview-tests").getText().contains("pass") ? true : null);
    PolicyEditor.type(browser, "{\"grants\":[" + WEB_DB.encode() + "],\"tests\":[{\"src\":\"web-1\",\"accept\":[\"db-1:tcp/22\"]}]}");
    assertTrue(browser.all("acl-preview-tests").isEmpty(), "the pass of the earlier text is gone");

    // a syntax error is marked at its line, in the gutter and in the list under the editor
    PolicyEditor.type(browser, "{\n\"grants\": [\n{\"src\": [\"tag:web\"] \"dst\": [\"tag:db\"], \"ports\": [\"tcp/5432\"]}\n]\n}");
    WebElement mark = browser.el("acl-mark");
    assertEquals("3", mark.getAttribute("data-line"), mark.getText());
    assertTrue(mark.getText().startsWith("Line 3: JSON syntax"), mark.getText());
    assertEquals(List.of(3L), PolicyEditor.gutterMarks(browser));
    // a server error (a JSON pointer) is marked at the line of its value
    PolicyEditor.type(browser, "{\"grants\": [\n" + WEB_DB.encode() + ",\n{\"src\": [\"tag:web\"], \"dst\": [\"tag:db\"], \"ports\": [\"tcp/0\"]}\n]}");
    browser.el("acl-save").click();
    WebElement server = browser.await("the server's error marked", d -> browser.all("acl-mark").stream()
        .filter(e -> "/grants/1/ports/0".equals(e.getAttribute("data-field"))).findFirst().orElse(null));
    assertEquals("3", server.getAttribute("data-line"), server.getText());
    assertEquals(List.of(3L), PolicyEditor.gutterMarks(browser));
    assertEquals(2, http.get(app.coordinatorPort(), "/v1/acl?team=acl&environment=prod", cluster.admin()).bodyAsJsonObject().getLong("version"));
    List<String> later = browser.severeLogs().stream().filter(l -> !l.contains("/api/v1/acl")).toList(); // the save's 400
    assertTrue(later.isEmpty(), "no script error or CSP violation: " + later);
  }

  @Test
  void theHistoryComparesVersionsAndLoadsOneIntoTheEditor() {
    put("hist", new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432", "tcp/6432")).add(WEB_WEB)));
    browser.open("/#/acl/history?team=hist&environment=prod");
    browser.await("three versions", d -> browser.all("acl-version-row").size() == 3 ? true : null);
    // any two versions
    new org.openqa.selenium.support.ui.Select(browser.el("acl-compare-from")).selectByValue("1");
    new org.openqa.selenium.support.ui.Select(browser.el("acl-compare-to")).selectByValue("3");
    browser.el("acl-compare-submit").click();
    browser.await("the diff of 1 and 3",
        d -> browser.el("acl-diff-summary").getText().startsWith("From version 1 to version 3 (current)") ? true : null);
    assertTrue(texts("acl-diff-add").stream().anyMatch(t -> t.contains("\"tcp/6432\"")), texts("acl-diff-add").toString());
    assertTrue(texts("acl-diff-add").stream().anyMatch(t -> t.contains("\"tcp/8080\"")), texts("acl-diff-add").toString());
    // the line that gained a comma is the one removed (and added again): nothing else was taken away
    assertEquals(1, texts("acl-diff-del").size(), texts("acl-diff-del").toString());
    assertTrue(texts("acl-diff-del").get(0).endsWith("\"tcp/5432\""), texts("acl-diff-del").toString());

    // a version against the current one
    row("2").findElement(Browser.test("acl-history-compare-current")).click();
    browser.await("the diff of 2 and the current",
        d -> browser.el("acl-diff-summary").getText().startsWith("From version 2 to version 3 (current)") ? true : null);
    assertTrue(texts("acl-diff-add").stream().anyMatch(t -> t.contains("\"tcp/6432\"")), texts("acl-diff-add").toString());
    assertTrue(texts("acl-diff-add").stream().noneMatch(t -> t.contains("8080")), texts("acl-diff-add").toString());
    browser.screenshot("acl-history");
    assertNoSeriousViolations("the history page with a diff");

    // version 1 into the editor: the policy page shows it, unsaved
    row("1").findElement(Browser.test("acl-history-load")).click();
    browser.await("version 1 in the editor", d -> browser.el("acl-draft-note").getText().contains("version 1") ? true : null);
    browser.el("acl-code");
    assertTrue(PolicyEditor.value(browser).contains("tcp/5432") && !PolicyEditor.value(browser).contains("8080"), PolicyEditor.value(browser));
    assertEquals("3", browser.el("acl-version").getText(), "the stored version is unchanged");
    // edits made, then another version asked for: the history page asks first; Cancel keeps the edits
    String typed = "{\"grants\":[" + grant("tag:db", "tag:web", "udp/53").encode() + "]}";
    PolicyEditor.type(browser, typed);
    // one more keystroke and the page is left at once, well within the draft's 300 ms debounce: the draft keeps it too
    String edited = typed + " ";
    new org.openqa.selenium.interactions.Actions(browser.driver()).sendKeys(org.openqa.selenium.Keys.END).sendKeys(" ").perform();
    browser.el("acl-tab-history").click();
    row("2").findElement(Browser.test("acl-history-load")).click();
    assertTrue(browser.el("confirm-dialog").getText().contains("Discard your edits?"), browser.el("confirm-dialog").getText());
    browser.el("confirm-cancel").click();
    browser.el("acl-tab-policy").click();
    browser.await("the edits kept", d -> edited.equals(PolicyEditor.value(browser)) ? true : null);
    browser.el("acl-tab-history").click();
    row("2").findElement(Browser.test("acl-history-load")).click();
    browser.el("confirm-ok").click();
    browser.await("version 2 in the editor", d -> browser.el("acl-draft-note").getText().contains("version 2") ? true : null);
    browser.await("its text", d -> PolicyEditor.value(browser).contains("tcp/8080") && !PolicyEditor.value(browser).contains("6432") ? true : null);
    assertEquals(3, http.get(app.coordinatorPort(), "/v1/acl?team=hist&environment=prod", cluster.admin()).bodyAsJsonObject().getLong("version"),
        "loading saves nothing");
  }

  static List<String> texts(String hook) {
    return browser.all(hook).stream().map(WebElement::getText).toList();
  }

  static WebElement row(String version) {
    return browser.await("row " + version, d -> browser.all("acl-version-row").stream()
        .filter(e -> version.equals(e.getAttribute("data-version"))).findFirst().orElse(null));
  }

  static void assertNoSeriousViolations(String where) {
    List<Rule> bad = new AxeBuilder().analyze(browser.driver()).getViolations().stream()
        .filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact())).toList();
    assertTrue(bad.isEmpty(), where + ": " + bad.stream().map(v -> v.getId() + " " + v.getNodes().stream()
        .map(n -> String.valueOf(n.getTarget())).toList()).toList());
  }

  static JsonObject grant(String src, String dst, String... ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray(List.of((Object[]) ports)));
  }

  static void put(String team, JsonObject policy) {
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/acl?team=" + team + "&environment=prod", cluster.admin(), policy);
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
