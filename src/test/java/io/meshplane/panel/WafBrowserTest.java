package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.interactions.Actions;

/**
 * The WAF pages (traffic policies) in a real headless Chromium against a real replica and PostgreSQL:
 * the version line with the mode, the CodeMirror editor preloaded with the stored document, a save with
 * If-Match, a 400 marked at the line of the field it names ({@code rules[1].expression}), a failing
 * document test refused under its own heading, a stale If-Match (409), the preview of the editor's text
 * against pasted sample requests (a changed decision), the history with a version viewed, loaded into
 * the editor and restored, and a viewer (waf:read only) who sees no Save and no Restore.
 *
 * <p>Teams: {@code waf} (the editor) and {@code wafh} (the history), each with versions 1 (no-admin)
 * and 2 (no-admin and no-debug) stored through the coordinator API.
 */
@Timeout(300)
class WafBrowserTest {
  static final String NO_ADMIN = "{\"id\":\"no-admin\",\"expression\":\"request.path.startsWith('/admin')\","
      + "\"action\":{\"type\":\"deny\",\"status\":403}}";
  static final String NO_DEBUG = "{\"id\":\"no-debug\",\"expression\":\"request.path.startsWith('/debug')\","
      + "\"action\":{\"type\":\"deny\",\"status\":404}}";
  static final String ADMIN_TEST = "{\"name\":\"admin is internal\",\"expect\":\"deny\",\"rule\":\"no-admin\",\"request\":{\"target\":\"/admin/users\"}}";
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
    PanelSession.user(app, "wafadmin", "admin", "*", "*");
    PanelSession.user(app, "wafviewer", "viewer", "waf", "prod");
    for (String team : List.of("waf", "wafh")) {
      put(team, "{\"rules\":[" + NO_ADMIN + "],\"tests\":[" + ADMIN_TEST + "]}");
      put(team, "{\"mode\":\"shadow\",\"rules\":[" + NO_ADMIN + "," + NO_DEBUG + "],\"tests\":[" + ADMIN_TEST + "]}");
    }
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1000);
    browser.signIn("/", "wafadmin", PanelSession.PASSWORD);
    browser.el("nav-waf");
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
  void theEditorSavesMarksRefusesPreviewsAndSaysWhenItIsStale() {
    browser.el("nav-waf").click();
    browser.type("waf-team", "waf");
    browser.type("waf-environment", "prod");
    browser.el("waf-load").click();
    WebElement line = browser.await("the version line", d -> browser.el("waf-version-line").getText().startsWith("Version 2") ? browser.el("waf-version-line") : null);
    assertTrue(line.getText().matches("Version 2 · mode shadow \\(evaluated and reported, nothing is denied\\) · stored .+ by .+"), line.getText());
    assertEquals("shadow", browser.el("waf-mode").getText());
    browser.el("waf-code"); // CodeMirror loaded from /vendor under the CSP
    assertTrue(PolicyEditor.value(browser, "waf").contains("no-debug"), PolicyEditor.value(browser, "waf"));
    assertEquals("Traffic policy JSON", browser.el("waf-code").findElement(By.cssSelector("textarea")).getAttribute("aria-label"));
    browser.el("waf-code").click();
    new Actions(browser.driver()).sendKeys(Keys.TAB).perform();
    assertEquals("waf-save", browser.driver().switchTo().activeElement().getAttribute("data-test"), "Tab leaves the editor");
    List<String> severe = browser.severeLogs().stream().filter(l -> !l.contains("/api/v1/session")).toList();
    assertTrue(severe.isEmpty(), "no script error, failed /vendor/ or /js/ file, or CSP violation: " + severe);

    // a 400: the expression that does not compile is marked at its line (rules[1].expression -> /rules/1/expression)
    PolicyEditor.type(browser, "waf", "{\"rules\": [\n" + NO_ADMIN + ",\n{\"id\": \"bad\",\n\"expression\": \"request.path.startsWith(\",\n"
        + "\"action\": {\"type\": \"deny\", \"status\": 403}}\n]}");
    browser.el("waf-save").click();
    WebElement mark = browser.await("the server's error marked", d -> browser.all("waf-mark").stream()
        .filter(e -> "rules[1].expression".equals(e.getAttribute("data-field"))).findFirst().orElse(null));
    assertEquals("4", mark.getAttribute("data-line"), mark.getText());
    assertTrue(PolicyEditor.gutterMarks(browser, "waf").contains(4L), PolicyEditor.gutterMarks(browser, "waf").toString());
    assertEquals("rules[1].expression", browser.el("waf-error").getAttribute("data-field"));
    assertEquals(2, version("waf").getLong("version"), "nothing stored on a 400");

    // a failing document test: refused, under its own heading, and marked at the test's line
    PolicyEditor.type(browser, "waf", "{\"rules\": [" + NO_ADMIN + "],\n\"tests\": [\n"
        + "{\"name\": \"shopping passes\", \"expect\": \"pass\", \"request\": {\"target\": \"/admin/shop\"}}\n]}");
    browser.el("waf-save").click();
    WebElement failure = browser.el("waf-test-failure");
    assertEquals("A document test failed: nothing was saved", failure.getText());
    WebElement test = browser.el("waf-test-error");
    assertEquals("tests[0]", test.getAttribute("data-field"));
    assertTrue(test.getText().contains("expected pass, got deny"), test.getText());
    assertEquals("3", browser.await("the test marked", d -> browser.all("waf-mark").stream()
        .filter(e -> "tests[0]".equals(e.getAttribute("data-field"))).findFirst().orElse(null)).getAttribute("data-line"));
    assertEquals(2, version("waf").getLong("version"), "nothing stored when a test fails");

    // the preview: the editor's text (a new rule) against pasted samples; one decision changes
    PolicyEditor.type(browser, "waf", "{\"mode\": \"enforce\", \"rules\": [" + NO_ADMIN + ",\n"
        + "{\"id\": \"no-search\", \"expression\": \"request.path.startsWith('/search')\", \"action\": {\"type\": \"deny\", \"status\": 403}}],\n"
        + "\"tests\": [" + ADMIN_TEST + "]}");
    assertTrue(browser.all("waf-errors-stale").stream().anyMatch(WebElement::isDisplayed), "the old errors are marked as such");
    browser.type("waf-samples", "[{\"target\": \"/search?q=union+station\"}, {\"method\": \"GET\", \"target\": \"/shop\"}]");
    browser.el("waf-preview-submit").click();
    browser.await("two rows", d -> browser.all("waf-preview-row").size() == 2 ? true : null);
    WebElement changed = previewRow("0");
    assertEquals("true", changed.getAttribute("data-changed"));
    assertEquals("pass", changed.findElement(Browser.test("waf-preview-current")).getAttribute("data-outcome"));
    assertEquals("deny", changed.findElement(Browser.test("waf-preview-candidate")).getAttribute("data-outcome"));
    assertTrue(changed.findElement(Browser.test("waf-preview-candidate")).getText().contains("no-search"), changed.getText());
    assertEquals("changed", changed.findElement(Browser.test("waf-preview-changed")).getText());
    assertEquals("false", previewRow("1").getAttribute("data-changed"));
    assertTrue(browser.el("waf-preview-summary").getText().startsWith("1 of 2 sample requests"), browser.el("waf-preview-summary").getText());
    assertTrue(browser.el("waf-preview-tests").getText().startsWith("The 1 test passes: saving would not be refused"), browser.el("waf-preview-tests").getText());
    assertEquals("true", browser.el("waf-preview-test").getAttribute("data-passed"));
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 2000));
    browser.screenshot("waf");
    assertEquals(List.of(), AccessibilityBrowserTest.violations(browser, "the WAF page with a preview"));
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 1000));

    // save: If-Match of version 2, version 3 in enforce mode
    browser.el("waf-save").click();
    browser.await("version 3", d -> "3".equals(browser.el("waf-version").getText()) ? true : null);
    assertEquals("enforce", browser.el("waf-mode").getText());
    assertTrue(browser.el("flash").getText().contains("saved as version 3 (mode enforce)"), browser.el("flash").getText());
    assertTrue(browser.all("waf-preview-row").isEmpty(), "the preview of the text before the save is gone");
    JsonObject stored = version("waf");
    assertEquals(3, stored.getLong("version"));
    assertEquals("enforce", stored.getString("mode"));
    assertEquals("no-search", stored.getJsonObject("policy").getJsonArray("rules").getJsonObject(1).getString("id"));

    // someone else saves meanwhile: the page's If-Match (3) is stale, nothing is saved, the reload shows theirs
    put("waf", "{\"rules\":[" + NO_ADMIN + "]}");
    PolicyEditor.type(browser, "waf", "{\"rules\": []}");
    browser.el("waf-save").click();
    assertTrue(browser.el("waf-conflict").getText().startsWith("Someone saved version 4 meanwhile"), browser.el("waf-conflict").getText());
    assertEquals(4, version("waf").getLong("version"));
    browser.el("waf-conflict-reload").click();
    browser.await("version 4", d -> "4".equals(browser.el("waf-version").getText()) ? true : null);
    assertTrue(PolicyEditor.value(browser, "waf").contains("no-admin"), PolicyEditor.value(browser, "waf"));
  }

  @Test
  void theHistoryShowsLoadsAndRestoresAVersion() {
    browser.open("/#/waf/history?team=wafh&environment=prod");
    browser.await("two versions", d -> browser.all("waf-version-row").size() == 2 ? true : null);
    assertEquals(List.of("2", "1"), browser.all("waf-version-row").stream().map(e -> e.getAttribute("data-version")).toList(), "newest first");
    assertEquals(List.of("shadow", "enforce"), browser.all("waf-version-row").stream().map(e -> e.getAttribute("data-mode")).toList());
    assertTrue(row("2").findElements(Browser.test("waf-history-restore")).isEmpty(), "the current version is not restored");

    row("1").findElement(Browser.test("waf-history-view")).click();
    browser.await("version 1 shown", d -> browser.el("waf-history-policy").getText().contains("no-admin") ? true : null);
    assertFalse(browser.el("waf-history-policy").getText().contains("no-debug"), browser.el("waf-history-policy").getText());
    assertEquals("enforce", browser.el("waf-history-mode").getText());
    assertEquals(List.of(), AccessibilityBrowserTest.violations(browser, "the WAF history with a version shown"));

    // restore version 1: asked first, then stored as version 3 with restored_from 1
    row("1").findElement(Browser.test("waf-history-restore")).click();
    assertTrue(browser.el("confirm-dialog").getText().contains("Restore the traffic policy"), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    browser.await("three versions", d -> browser.all("waf-version-row").size() == 3 ? true : null);
    assertTrue(browser.el("flash").getText().contains("Version 1 restored as version 3 (mode enforce)"), browser.el("flash").getText());
    JsonObject now = version("wafh");
    assertEquals(3, now.getLong("version"));
    assertEquals(1, now.getLong("restored_from"));
    assertEquals("enforce", now.getString("mode"));

    // version 2 into the editor: the policy page shows it, unsaved
    row("2").findElement(Browser.test("waf-history-load")).click();
    browser.await("version 2 in the editor", d -> browser.el("waf-draft-note").getText().contains("version 2") ? true : null);
    browser.el("waf-code");
    assertTrue(PolicyEditor.value(browser, "waf").contains("no-debug"), PolicyEditor.value(browser, "waf"));
    assertEquals("3", browser.el("waf-version").getText(), "the stored version is unchanged");
    assertTrue(browser.el("waf-version-line").getText().contains("restored from version 1"), browser.el("waf-version-line").getText());
    assertEquals(3, version("wafh").getLong("version"), "loading saves nothing");
  }

  @Test
  void aViewerReadsAndPreviewsButNeitherSavesNorRestores() {
    try (Browser viewer = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1000)) {
      viewer.signIn("/#/login", "wafviewer", PanelSession.PASSWORD);
      viewer.el("nav-waf").click();
      viewer.await("the version line", d -> viewer.el("waf-version-line").getText().startsWith("Version ") ? true : null);
      viewer.el("waf-code");
      assertTrue(viewer.all("waf-team").isEmpty(), "a viewer scoped to waf / prod picks no team");
      assertTrue(viewer.all("waf-save").isEmpty(), "no Save for a viewer");
      assertTrue(viewer.el("waf-read-only").getText().contains("not save"), viewer.el("waf-read-only").getText());
      Object readOnly = ((JavascriptExecutor) viewer.driver()).executeScript(
          "return document.querySelector(\"[data-test='waf-code']\").CodeMirror.getOption('readOnly');");
      assertEquals(true, readOnly, "the editor is read-only");
      // the preview is waf:read: a viewer may ask. A sample's fault is the preview's, not marked in the editor
      viewer.type("waf-samples", "[{\"method\": \"GET\"}]");
      viewer.el("waf-preview-submit").click();
      assertTrue(viewer.el("waf-preview-error").getText().contains("samples[0]"), viewer.el("waf-preview-error").getText());
      assertTrue(viewer.all("waf-mark").isEmpty(), "no mark in the editor for a sample's fault");
      viewer.type("waf-samples", "[{\"target\": \"/admin/x\"}]");
      viewer.el("waf-preview-submit").click();
      viewer.await("the preview", d -> viewer.all("waf-preview-row").size() == 1 ? true : null);
      viewer.el("waf-tab-history").click();
      viewer.await("the versions", d -> viewer.all("waf-version-row").size() >= 2 ? true : null);
      assertTrue(viewer.all("waf-history-restore").isEmpty(), "no Restore for a viewer");
    }
  }

  static WebElement previewRow(String index) {
    return browser.await("preview row " + index, d -> browser.all("waf-preview-row").stream()
        .filter(e -> index.equals(e.getAttribute("data-index"))).findFirst().orElse(null));
  }

  static WebElement row(String version) {
    return browser.await("row " + version, d -> browser.all("waf-version-row").stream()
        .filter(e -> version.equals(e.getAttribute("data-version"))).findFirst().orElse(null));
  }

  static JsonObject version(String team) {
    HttpResponse<Buffer> r = http.get(app.coordinatorPort(), "/v1/waf?team=" + team + "&environment=prod", cluster.admin());
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Stores a version through the coordinator API (no If-Match: these writes are the test's, not a page's). */
  static void put(String team, String document) {
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/waf?team=" + team + "&environment=prod", cluster.admin(),
        new JsonObject(document));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
