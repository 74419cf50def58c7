package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.deque.html.axecore.results.CheckedNode;
import com.deque.html.axecore.results.Results;
import com.deque.html.axecore.results.Rule;
import com.deque.html.axecore.selenium.AxeBuilder;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;

/**
 * Every page of the dashboard checked with axe-core (the Selenium integration's own axe.min.js: nothing
 * is fetched), in the light and in the dark colour scheme (Chromium's emulated
 * {@code prefers-color-scheme}): no violation of impact serious or critical. A failure names the page,
 * the scheme, the rule and the elements. Screenshots of each page in each scheme land in
 * target/screenshots ({@code a11y-<scheme>-<page>.png}).
 *
 * <p>A new page is one line of {@link #PAGES}: its route and a CSS selector that is shown once the page
 * has its data (a {@code data-test} hook).
 */
@Timeout(600)
class AccessibilityBrowserTest {
  /**
   * A page to check: {@code route} ({@code {node}} stands for the test node's id) and what shows once it is
   * loaded: CSS selectors (data-test hooks), each of which must match a shown element.
   */
  record Page(String name, String route, String... ready) {}

  /** The login page, checked signed out. */
  static final Page LOGIN = new Page("login", "/#/login", "[data-test=login-username]");

  /** Every page a signed-in admin sees. */
  static final List<Page> PAGES = List.of(
      new Page("overview", "/#/", "[data-test=overview-total][data-value]"),
      new Page("nodes", "/#/nodes", "[data-test=node-row]"),
      new Page("node", "/#/nodes/{node}", "[data-test=node-field-id]", "[data-test=node-operations]", "[data-test=peer-row]",
          "[data-test=node-certificate-serial]"),
      new Page("operations", "/#/operations", "[data-test=operation-row]"),
      new Page("tokens", "/#/tokens", "[data-test=token-row]"),
      new Page("acl", "/#/acl?team=team-a&environment=prod", "[data-test=acl-grant]"),
      new Page("ingress", "/#/ingress?team=team-a&environment=prod", "[data-test=ingress-updated]"),
      new Page("acl-history", "/#/acl/history?team=team-a&environment=prod", "[data-test=acl-version-row]"),
      new Page("waf", "/#/waf?team=team-a&environment=prod", "[data-test=waf-mode]", "[data-test=waf-code]"),
      new Page("waf-history", "/#/waf/history?team=team-a&environment=prod", "[data-test=waf-version-row]"),
      new Page("audit", "/#/audit", "[data-test=audit-row]"),
      new Page("events", "/#/events", "[data-test=event-row]"),
      new Page("users", "/#/users", "[data-test=user-row]"),
      new Page("meshca", "/#/meshca", "[data-test=meshca-authority]", "[data-test=meshca-count-valid][data-value]",
          "[data-test=meshca-revocation]", "[data-test=meshca-rotation-stepper]", "[data-test=meshca-rotation-advance]"),
      new Page("api-docs", "/api-docs.html", "#swagger-ui .opblock"));

  static final Set<String> BLOCKING = Set.of("serious", "critical");

  static TestCluster cluster;
  static Meshplane app;
  static Browser browser;
  static String nodeId;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false", "heartbeat.stale_after", "3s"));
    app = cluster.replica(0);
    Http http = cluster.http();
    PanelSession.user(app, "admin", "admin", "*", "*");
    // something on every page: two nodes that see each other (peers, rules), a policy with history, and events
    // (both go stale 3 s after their one heartbeat); a third node stays pending
    Nodes.Enrolled a = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "a11y-web", "team-a", "prod");
    Nodes.Enrolled b = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "a11y-db", "team-a", "prod");
    Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "a11y-pending", "team-a", "prod");
    nodeId = a.id();
    assertEquals(200, http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/nodes/" + a.id() + "/tags", cluster.admin(),
        new JsonObject().put("tags", List.of("tag:web"))).statusCode());
    JsonObject policy = new JsonObject("{\"grants\":[{\"src\":[\"*\"],\"dst\":[\"*\"],\"ports\":[\"tcp/443\"]}]}");
    for (int i = 0; i < 2; i++) {
      assertEquals(200, http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/acl?team=team-a&environment=prod", cluster.admin(), policy)
          .statusCode());
    }
    // a traffic policy with two versions (the WAF page and its history)
    for (String mode : List.of("enforce", "shadow")) {
      JsonObject waf = new JsonObject("{\"mode\":\"" + mode + "\",\"rules\":[{\"id\":\"no-admin\",\"expression\":"
          + "\"request.path.startsWith('/admin')\",\"action\":{\"type\":\"deny\",\"status\":403}}],"
          + "\"tests\":[{\"name\":\"admin is internal\",\"expect\":\"deny\",\"request\":{\"target\":\"/admin\"}}]}");
      assertEquals(200, http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/waf?team=team-a&environment=prod", cluster.admin(), waf)
          .statusCode());
    }
    for (Nodes.Enrolled n : List.of(a, b)) {
      assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(1))
          .statusCode());
    }
    // MeshCA: a certificate for the node shown (its page's Certificate section), a revoked one of the other (the MeshCA page's revocations)
    try {
      io.meshplane.testing.Certificates.issue(app, a, "team-a", "prod");
      String gone = io.meshplane.testing.Certificates.issue(app, b, "team-a", "prod").serial();
      assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/meshca/certificates/" + gone + "/revoke", cluster.admin(),
          new JsonObject().put("reason", "superseded")).statusCode());
      // a rotation open (staged: nodes see nothing of it), so that the MeshCA page shows its stepper, preview and buttons
      assertEquals(201, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/meshca/rotations", cluster.admin(),
          new JsonObject().put("kind", "intermediate")).statusCode());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    // an operation (pending: the node does not beat again) for the operations page and the node's table
    assertEquals(202, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + a.id() + "/rekey", cluster.admin(), null)
        .statusCode());
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800);
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
  void everyPageHasNoSeriousOrCriticalViolationInEitherColourScheme() {
    List<String> failures = new ArrayList<>();
    for (String scheme : List.of("light", "dark")) {
      scheme(browser, scheme);
      browser.driver().manage().deleteAllCookies();
      failures.addAll(check(LOGIN, scheme));
      signIn();
      for (Page page : PAGES) failures.addAll(check(page, scheme));
    }
    assertEquals(List.of(), failures, "axe-core violations of impact serious or critical:\n" + String.join("\n", failures));
  }

  /** Emulates {@code prefers-color-scheme: scheme} in the browser's tab (it stays through navigations). */
  static void scheme(Browser browser, String scheme) {
    ((ChromeDriver) browser.driver()).executeCdpCommand("Emulation.setEmulatedMedia",
        Map.of("media", "", "features", List.of(Map.of("name", "prefers-color-scheme", "value", scheme))));
    Object matches = ((JavascriptExecutor) browser.driver()).executeScript(
        "return window.matchMedia('(prefers-color-scheme: " + scheme + ")').matches;");
    assertEquals(true, matches, "the " + scheme + " scheme is emulated");
  }

  static void signIn() {
    browser.signIn("/#/login", "admin", PanelSession.PASSWORD);
    browser.el("logout");
  }

  /** Opens the page, waits for its data, runs axe; the serious and critical violations, one line per element. */
  static List<String> check(Page page, String scheme) {
    browser.open(page.route().replace("{node}", nodeId));
    for (String ready : page.ready()) {
      browser.await(page.name() + " loaded (" + ready + ")", Duration.ofSeconds(30), d -> {
        for (WebElement e : d.findElements(By.cssSelector(ready))) {
          if (e.isDisplayed()) return true;
        }
        return null;
      });
    }
    browser.screenshot("a11y-" + scheme + "-" + page.name());
    return violations(browser, page.name() + " [" + scheme + "]");
  }

  /** axe-core's serious and critical violations on the page shown, one line per element, each starting with {@code label}. */
  static List<String> violations(Browser browser, String label) {
    Results results = new AxeBuilder().analyze(browser.driver());
    List<String> out = new ArrayList<>();
    if (results.isErrored()) out.add(label + ": axe failed: " + results.getErrorMessage());
    for (Rule rule : results.getViolations()) {
      if (!BLOCKING.contains(rule.getImpact())) continue;
      for (CheckedNode node : rule.getNodes()) {
        String summary = node.getFailureSummary() == null ? "" : node.getFailureSummary().replace('\n', ' ');
        out.add(label + " " + rule.getId() + " (" + rule.getImpact() + "): " + node.getTarget() + " — " + summary);
      }
    }
    return out;
  }
}
