package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.agent.NodeAgent;
import io.meshplane.agent.TestAgents;
import io.meshplane.app.Meshplane;
import io.meshplane.http.Dashboard;
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
import org.openqa.selenium.Cookie;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The dashboard end to end in a real headless Chromium (Debian's chromium and chromedriver) against a
 * real replica: a person logs in, watches a node enrolled by the test go from pending to online
 * without reloading, re-tags it, re-keys a real reference agent and watches the operation succeed,
 * edits the ACL with an error then a fix, previews a policy whose test fails then passes, rolls the
 * policy back from its history, creates and revokes a token, finds it all in the audit
 * log, and logs out. Screenshots of every main page land in target/screenshots (not committed).
 */
@Timeout(300)
class DashboardBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static NodeAgent agent;
  static Path agentDir;

  @BeforeAll
  static void start() throws Exception {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    // plain http on loopback: the cookie cannot be Secure; agents beat every second so operations complete quickly
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.interval", "1s"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "admin", "admin", "*", "*");
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
  void thePanelServesTheDashboardWithAStrictContentSecurityPolicy() {
    HttpResponse<Buffer> index = http.get(app.panelPort(), "/");
    assertEquals(200, index.statusCode());
    assertTrue(index.getHeader("Content-Type").startsWith("text/html"), index.getHeader("Content-Type"));
    assertEquals(Dashboard.CSP, index.getHeader("Content-Security-Policy"));
    assertEquals("nosniff", index.getHeader("X-Content-Type-Options"));
    assertEquals("DENY", index.getHeader("X-Frame-Options"));
    assertTrue(!index.bodyAsString().contains("<script>") && !index.bodyAsString().contains(" onclick"), "no inline script");
    HttpResponse<Buffer> js = http.get(app.panelPort(), "/js/app.js");
    assertEquals(200, js.statusCode());
    assertTrue(js.getHeader("Content-Type").contains("javascript"), js.getHeader("Content-Type"));
    assertEquals("no-cache", js.getHeader("Cache-Control"), "files are checked on every load, never marked immutable");
    // the API's paths never fall through to the files, and a missing file is a plain 404
    assertEquals(404, http.get(app.panelPort(), "/api/v1/no-such-thing").statusCode());
    assertEquals(404, http.get(app.panelPort(), "/no-such-file.js").statusCode());
    int traversal = http.get(app.panelPort(), "/js/../../../etc/passwd").statusCode();
    assertTrue(traversal == 400 || traversal == 404, "a path outside the webroot: " + traversal);
  }

  @Test
  void aPersonRunsTheMeshFromTheBrowser() throws Exception {
    // log in (a wrong password first: the problem's message is shown)
    browser.signIn("/", "admin", "not the password");
    browser.await("the login error", d -> browser.el("login-error").getText().isBlank() ? null : true);
    browser.screenshot("01-login");
    browser.type("login-password", PanelSession.PASSWORD);
    browser.el("login-submit").click();
    browser.el("nav-nodes");
    assertEquals("admin", browser.el("header-username").getText());
    browser.await("the overview's numbers", d -> browser.el("overview-total").getAttribute("data-value") != null ? true : null);
    browser.screenshot("02-overview");

    // a node enrolled by the test shows as pending, then online without reloading the page
    Nodes.Enrolled node = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "browser-1", "team-a", "prod");
    browser.el("nav-nodes").click();
    browser.await("the node listed as pending", d -> status(node.id()).equals("pending") ? true : null);
    ((JavascriptExecutor) browser.driver()).executeScript("window.meshplaneNotReloaded = true;");
    browser.screenshot("03-nodes-pending");
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(),
        Nodes.beat(1)).statusCode());
    browser.await("the node online by the live refresh", Duration.ofSeconds(30), d -> status(node.id()).equals("online") ? true : null);
    assertEquals(true, ((JavascriptExecutor) browser.driver()).executeScript("return window.meshplaneNotReloaded === true;"),
        "the page was not reloaded");
    browser.screenshot("04-nodes-online");

    // open it and re-tag it
    browser.await("the node's link clicked", d -> {
      row(node.id()).findElement(Browser.test("node-link")).click();
      return true;
    });
    browser.await("the node page", d -> browser.el("node-field-id").getText().equals(node.id()) ? true : null);
    browser.type("node-retag-input", "tag:web tag:browser");
    browser.el("node-retag-submit").click();
    browser.el("confirm-ok").click();
    browser.await("the new tags on the node page", d -> browser.el("node-field-tags").getText().contains("tag:browser") ? true : null);
    browser.screenshot("05-node");

    // a real agent, re-keyed from its page: the operation is seen to succeed
    agentDir = Files.createTempDirectory("dashboard-agent-");
    agent = TestAgents.start("http://127.0.0.1:" + app.coordinatorPort(), Tokens.issue(app, "team-a", "prod", Surface.ENROLLMENT).jwt(),
        "agent-1", List.of("tag:db"), agentDir.resolve("state"));
    String agentId = awaitNode("agent-1");
    browser.open("/#/nodes/" + agentId);
    browser.await("the agent online", d -> "online".equals(browser.el("node-status").getAttribute("data-status")) ? true : null);
    String oldKey = browser.el("node-field-public_key").getText();
    browser.el("node-rekey").click();
    browser.el("confirm-ok").click();
    browser.await("the re-key succeeded", Duration.ofSeconds(60), d -> browser.all("node-operation").stream().anyMatch(
        e -> attr(e, "data-op-kind").equals("rekey") && attr(e, "data-op-status").equals("succeeded")) ? true : null);
    browser.await("the new key shown", d -> !browser.el("node-field-public_key").getText().equals(oldKey) ? true : null);
    browser.screenshot("06-node-rekeyed");

    // the ACL: an error shown at the failing grant, then the fix saved
    browser.el("nav-acl").click();
    browser.type("acl-team", "team-a");
    browser.type("acl-environment", "prod");
    browser.el("acl-load").click();
    browser.await("the policy loaded", d -> browser.el("acl-version").getText().isBlank() ? null : true);
    String before = browser.el("acl-version").getText();
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\"]},"
        + "{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/99999\"]}]}");
    browser.el("acl-save").click();
    WebElement grantError = browser.el("acl-grant-error");
    assertTrue(grantError.getAttribute("data-field").startsWith("/grants/1"), grantError.getAttribute("data-field"));
    browser.screenshot("07-acl-error");
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\"]}]}");
    browser.el("acl-save").click();
    browser.await("a new policy version", d -> !browser.el("acl-version").getText().equals(before) ? true : null);
    assertTrue(browser.all("acl-grant-error").stream().noneMatch(WebElement::isDisplayed));
    browser.screenshot("08-acl-saved");

    // the preview runs the editor's own tests before saving: a failing one is shown, and nothing is saved
    String saved = browser.el("acl-version").getText();
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\"]}],"
        + "\"tests\":[{\"src\":\"browser-1\",\"accept\":[\"agent-1:tcp/22\"]}]}");
    browser.type("acl-preview-node", "browser-1");
    browser.el("acl-preview-submit").click();
    WebElement failing = browser.await("the failing test in the node preview",
        d -> browser.el("acl-preview-tests").getText().contains("/tests/0/") ? browser.el("acl-preview-tests") : null);
    assertTrue(failing.getText().contains("/tests/0/accept/0") && failing.getText().contains("browser-1 cannot reach agent-1 on tcp/22")
        && failing.getText().contains("saving would be refused"), failing.getText());
    assertTrue(attr(failing, "class").contains("form-error"), "shown as an error: " + attr(failing, "class"));
    browser.type("acl-conn-src", "browser-1");
    browser.type("acl-conn-dst", "agent-1");
    browser.type("acl-conn-port", "tcp/22");
    browser.el("acl-conn-submit").click();
    browser.await("the failing test in the one-connection result",
        d -> browser.el("acl-conn-tests").getText().contains("/tests/0/accept/0") ? true : null);
    assertEquals("denied", browser.el("acl-conn-allowed").getText());
    browser.screenshot("15-acl-preview-test-failed");
    assertEquals(saved, browser.el("acl-version").getText(), "a preview saves nothing");
    assertEquals(Long.parseLong(saved), policy().getLong("version"), "a preview saves nothing");
    // the test fixed: both previews say it passes
    PolicyEditor.type(browser, "{\"grants\":[{\"src\":[\"tag:web\"],\"dst\":[\"tag:db\"],\"ports\":[\"tcp/5432\"]}],"
        + "\"tests\":[{\"src\":\"browser-1\",\"accept\":[\"agent-1:tcp/5432\"],\"deny\":[\"agent-1:tcp/22\"]}]}");
    browser.el("acl-preview-submit").click();
    browser.await("the test passing in the node preview", d -> browser.el("acl-preview-tests").getText().contains("pass") ? true : null);
    assertTrue(!browser.el("acl-preview-tests").getText().contains("/tests/"), browser.el("acl-preview-tests").getText());
    browser.el("acl-conn-submit").click();
    browser.await("the test passing in the one-connection result",
        d -> browser.el("acl-conn-tests").getText().contains("pass") ? true : null);
    assertEquals(Long.parseLong(saved), policy().getLong("version"), "a preview saves nothing");
    browser.el("acl-save").click();
    browser.await("the policy with its test saved", d -> !browser.el("acl-version").getText().equals(saved) ? true : null);
    long withTest = Long.parseLong(browser.el("acl-version").getText());
    assertEquals(1, policy().getJsonArray("tests").size());

    // the history: roll back to the version before the test was added (a new version, history kept)
    browser.el("acl-tab-history").click();
    browser.await("both versions listed", d -> browser.all("acl-version-row").size() >= 2 ? true : null);
    browser.screenshot("14-acl-history");
    browser.await("the roll back of version " + saved + " clicked", d -> {
      WebElement versionRow = browser.all("acl-version-row").stream().filter(e -> attr(e, "data-version").equals(saved)).findFirst()
          .orElse(null);
      if (versionRow == null) return null;
      versionRow.findElement(Browser.test("acl-history-restore")).click();
      return true;
    });
    assertTrue(browser.el("confirm-dialog").getText().contains("version " + saved), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    String restored = Long.toString(withTest + 1);
    browser.await("the restored version listed", d -> browser.all("acl-version-row").stream()
        .anyMatch(e -> attr(e, "data-version").equals(restored) && e.getText().contains("(current)")) ? true : null);
    JsonObject now = policy();
    assertEquals(withTest + 1, now.getLong("version"), now.encode());
    assertEquals(Long.parseLong(saved), now.getLong("restored_from"), now.encode());
    JsonObject earlier = http.get(app.coordinatorPort(), "/v1/acl/versions/" + saved + "?team=team-a&environment=prod", cluster.admin())
        .bodyAsJsonObject();
    assertEquals(earlier.getJsonArray("grants"), now.getJsonArray("grants"));
    assertEquals(new JsonArray(), now.getJsonArray("tests"), "the test added later is gone with the roll back");

    // a token for a script: the secret is shown once; then revoked
    browser.el("nav-tokens").click();
    browser.type("token-create-name", "ci-deploy");
    new Select(browser.el("token-create-surface")).selectByValue("pipeline");
    browser.type("token-create-team", "team-a");
    browser.type("token-create-environment", "prod");
    browser.el("token-create-submit").click();
    String secret = browser.el("token-secret").getText();
    assertEquals(3, secret.split("\\.").length, "a JWT: " + secret);
    browser.screenshot("09-token-created");
    assertEquals(200, http.get(app.coordinatorPort(), "/v1/auth/whoami", secret).statusCode(), "the secret shown works");
    browser.await("the token's revoke clicked", d -> {
      WebElement tokenRow = browser.all("token-row").stream().filter(e -> attr(e, "data-token-name").equals("ci-deploy")).findFirst()
          .orElse(null);
      if (tokenRow == null) return null;
      tokenRow.findElement(Browser.test("token-revoke")).click();
      return true;
    });
    browser.el("confirm-ok").click();
    browser.await("the token revoked", d -> browser.all("token-row").stream()
        .noneMatch(e -> attr(e, "data-token-name").equals("ci-deploy") && attr(e, "data-token-state").equals("active")) ? true : null);
    assertEquals(401, http.get(app.coordinatorPort(), "/v1/auth/whoami", secret).statusCode(), "revoked");

    // the audit log names the person for each of these
    browser.el("nav-audit").click();
    for (String action : List.of("node.retag", "node.rekey", "acl.update", "acl.rollback", "token.create", "token.revoke",
        "session.login")) {
      browser.await("audit " + action + " by a user", d -> browser.all("audit-row").stream()
          .anyMatch(e -> attr(e, "data-action").equals(action) && attr(e, "data-actor-type").equals("user")) ? true : null);
    }
    browser.screenshot("10-audit");
    browser.el("nav-events").click();
    browser.el("events-table");
    browser.screenshot("11-events");
    browser.el("nav-users").click();
    browser.el("users-table");
    browser.screenshot("12-users");

    // logging out ends the session for the server too
    Cookie session = browser.driver().manage().getCookieNamed("meshplane_session");
    assertTrue(session != null && session.isHttpOnly(), "the session cookie is HttpOnly");
    assertEquals("Strict", session.getSameSite());
    browser.el("logout").click();
    browser.el("login-username");
    HttpResponse<Buffer> after = http.send(http.request(HttpMethod.GET, app.panelPort(), "/api/v1/session")
        .putHeader("Cookie", "meshplane_session=" + session.getValue()));
    assertEquals(401, after.statusCode());

    // no script error and no CSP violation in the whole walk (failed requests the test caused are expected)
    List<String> severe = browser.severeLogs().stream().filter(m -> !m.contains("Failed to load resource")).toList();
    assertEquals(List.of(), severe);
  }

  @Test
  void aNarrowWindowHasNoSidewaysScrollAndTheKeyboardSignsIn() {
    try (Browser narrow = new Browser("http://127.0.0.1:" + app.panelPort(), 390, 800)) {
      narrow.open("/#/nodes");
      narrow.el("login-username").sendKeys("admin");
      narrow.el("login-username").sendKeys(org.openqa.selenium.Keys.TAB);
      narrow.driver().switchTo().activeElement().sendKeys(PanelSession.PASSWORD, org.openqa.selenium.Keys.ENTER);
      narrow.el("nodes-table");
      Object overflow = ((JavascriptExecutor) narrow.driver()).executeScript(
          "return document.documentElement.scrollWidth - document.documentElement.clientWidth;");
      assertTrue(((Number) overflow).longValue() <= 0, "sideways scroll of " + overflow + " px");
      narrow.screenshot("13-nodes-narrow");
    }
  }

  /** The stored policy of team-a/prod, read through the coordinator API. */
  private static JsonObject policy() {
    HttpResponse<Buffer> r = http.get(app.coordinatorPort(), "/v1/acl?team=team-a&environment=prod", cluster.admin());
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static String status(String nodeId) {
    try {
      WebElement r = row(nodeId);
      return r == null ? "" : attr(r, "data-status");
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }

  private static WebElement row(String nodeId) {
    return browser.driver().findElements(By.cssSelector("[data-test='node-row'][data-node-id='" + nodeId + "']")).stream()
        .findFirst().orElse(null);
  }

  private static String attr(WebElement e, String name) {
    try {
      String v = e.getAttribute(name);
      return v == null ? "" : v;
    } catch (StaleElementReferenceException refreshed) {
      return "";
    }
  }

  /** The id of the node named {@code name} once the agent has enrolled it. */
  private static String awaitNode(String name) {
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
