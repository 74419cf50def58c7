package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.openqa.selenium.WebElement;

/**
 * The WAF page's "At the edge" sections in a real headless Chromium against a real replica: two ingress
 * nodes post heartbeats with their agent credential as an agent would (API.md §20 "What a node reports"):
 * edge-1 enforces version 1 with a passing probe, per-route WAF counters and a denied sample; edge-2 reports
 * no traffic policy, so it is behind. The page lists both with their sync and probe, puts edge-2 under
 * Needs attention, sums the route's counters, charts what was counted between refreshes (and takes a counter
 * that went down as an agent restart), lists the sample, and previews the editor's text on it.
 *
 * <p>The mesh, team {@code wt} / {@code prod}: edge-1 and edge-2 ({@code tag:edge}), web-1 ({@code tag:web},
 * web:8080 bound); the route app.example.com/ → web-1 web through tag:edge; traffic policy version 1 denies /admin.
 */
@Timeout(180)
class WafTrafficBrowserTest {
  static final String NO_ADMIN = "{\"id\":\"no-admin\",\"expression\":\"request.path.startsWith('/admin')\","
      + "\"action\":{\"type\":\"deny\",\"status\":403}}";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static String route;
  static JsonObject edge1;
  static JsonObject edge2;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "wt-op", "operator", "wt", "prod");
    edge1 = enroll("edge-1", "tag:edge");
    edge2 = enroll("edge-2", "tag:edge");
    String web = enroll("web-1", "tag:web").getJsonObject("node").getString("id");
    send(HttpMethod.PUT, "/v1/nodes/" + web + "/services", new JsonObject().put("services", new JsonArray().add("web:8080")), 200);
    send(HttpMethod.PUT, "/v1/acl?team=wt&environment=prod", new JsonObject().put("grants", new JsonArray().add(new JsonObject()
        .put("src", new JsonArray().add("tag:edge")).put("dst", new JsonArray().add("tag:web")).put("ports", new JsonArray().add("tcp/8080")))), 200);
    route = send(HttpMethod.POST, "/v1/ingress/routes", new JsonObject().put("team", "wt").put("environment", "prod").put("hostname", "app.example.com")
        .put("path_prefix", "/").put("target", new JsonObject().put("node", web).put("service", "web")).put("exposure", "public").put("tls", "acme")
        .put("ingress_tag", "tag:edge"), 201).getString("id");
    send(HttpMethod.PUT, "/v1/waf?team=wt&environment=prod", new JsonObject("{\"rules\":[" + NO_ADMIN + "]}"), 200);
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1900);
    browser.signIn("/#/login", "wt-op", PanelSession.PASSWORD);
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
  void theNodesTheirTrafficAndSamplesAndAPreviewOnThem() {
    report(edge1, 10, 2, 1);
    report(edge2, -1, 0, 0);
    browser.el("nav-waf").click();

    // the nodes: edge-1 current with a passing probe of version 1, edge-2 behind (it reports no policy) and first
    browser.await("both nodes", d -> browser.all("waf-node").size() == 2 ? true : null);
    WebElement one = browser.await("edge-1 current", d -> node(id(edge1), "current"));
    assertEquals("passed", one.getAttribute("data-probe"));
    assertEquals("passed", one.findElement(Browser.test("waf-node-probe")).getText());
    assertTrue(one.findElement(Browser.test("waf-node-versions")).getText().contains("enforcing 1 (current 1)"), one.getText());
    assertTrue(one.getText().contains("version 1, status 403"), one.getText());
    WebElement two = browser.await("edge-2 behind", d -> node(id(edge2), "behind"));
    assertEquals("none", two.getAttribute("data-probe"));
    assertEquals(id(edge2), browser.all("waf-node").get(0).getAttribute("data-node-id"), "the node needing attention first");
    WebElement attention = browser.await("edge-2 needs attention", d -> browser.all("waf-attention-node").stream()
        .filter(e -> id(edge2).equals(e.getAttribute("data-node-id"))).findFirst().orElse(null));
    assertEquals("behind,probe none", attention.getAttribute("data-reasons"));
    assertTrue(attention.getText().contains("has applied policy version none, current is 1"), attention.getText());
    assertEquals(1, browser.all("waf-attention-node").size(), "edge-1 needs nothing");

    // the route's counters, summed over the nodes that report them
    WebElement row = browser.await("the route's counters", d -> traffic("10"));
    assertEquals("2", row.getAttribute("data-denied"));
    assertEquals("1", row.getAttribute("data-would-deny"));
    assertEquals("10", row.findElement(Browser.test("waf-traffic-evaluated")).getText());
    assertTrue(row.getText().contains("app.example.com/"), row.getText());
    assertEquals("no-admin", row.findElement(Browser.test("waf-traffic-rule")).getAttribute("data-rule"));

    // the sample edge-1 reported
    WebElement sample = browser.el("waf-reported-sample");
    assertEquals("no-admin", sample.getAttribute("data-rule"));
    assertEquals("deny", sample.getAttribute("data-outcome"));
    assertEquals(route, sample.getAttribute("data-route-id"));
    assertTrue(sample.getText().contains("edge-1") && sample.getText().contains("GET /admin/users?token=[redacted]"), sample.getText());

    // the chart: what was counted between refreshes (the first refresh is the baseline), then an agent restart
    report(edge1, 15, 4, 1);
    WebElement latest = browser.await("5 more evaluated", d -> chartLatest("5"));
    assertEquals("2", latest.getAttribute("data-denied"));
    assertEquals("no-admin=2", latest.getAttribute("data-rules"));
    assertTrue(latest.getText().contains("since the page was opened: 5 evaluated, 2 denied"), latest.getText());
    browser.await("the counters summed again", d -> traffic("15"));
    report(edge1, 3, 1, 0); // lower than before: the agent restarted, its 3 and 1 are new
    latest = browser.await("the restart counted from zero", d -> chartLatest("8"));
    assertEquals("3", latest.getAttribute("data-denied"));
    assertTrue(browser.el("waf-traffic-chart").getAttribute("aria-label").contains("8 evaluated, 3 denied"),
        browser.el("waf-traffic-chart").getAttribute("aria-label"));

    // the editor's text without the rule, on the reported samples: the denied request would pass
    browser.el("waf-code");
    PolicyEditor.type(browser, "waf", "{\"rules\": []}");
    browser.el("waf-preview-reported").click();
    WebElement changed = browser.await("the preview on reported samples", d -> browser.all("waf-reported-row").size() == 1 ? browser.all("waf-reported-row").get(0) : null);
    assertEquals("true", changed.getAttribute("data-changed"));
    assertEquals("deny", changed.findElement(Browser.test("waf-reported-current")).getAttribute("data-outcome"));
    assertEquals("pass", changed.findElement(Browser.test("waf-reported-candidate")).getAttribute("data-outcome"));
    assertTrue(changed.getText().contains("GET /admin/users?token=[redacted] (route app.example.com/)"), changed.getText());
    assertTrue(browser.el("waf-reported-summary").getText().startsWith("1 of 1 reported sample would be decided differently"),
        browser.el("waf-reported-summary").getText());
    assertTrue(browser.all("waf-preview-row").isEmpty(), "the pasted-samples preview keeps its own hooks");

    List<String> severe = browser.severeLogs().stream().filter(l -> !l.contains("/api/v1/session")).toList();
    assertTrue(severe.isEmpty(), "no script error, failed /vendor/ or /js/ file, or CSP violation: " + severe);
    ((org.openqa.selenium.JavascriptExecutor) browser.driver()).executeScript("document.getElementById('waf-attention-h').scrollIntoView()");
    browser.screenshot("waf-edge"); // target/screenshots/waf-edge.png, copied by hand to docs/img/waf-edge.png
    assertEquals(List.of(), AccessibilityBrowserTest.violations(browser, "the WAF page with its ingress nodes, traffic and samples"));
    AccessibilityBrowserTest.scheme(browser, "dark"); // the charts are drawn again in the dark scheme's colours
    browser.await("the chart drawn again", d -> browser.el("waf-traffic-chart").findElements(org.openqa.selenium.By.cssSelector("canvas")).size() == 1 ? true : null);
    assertEquals(List.of(), AccessibilityBrowserTest.violations(browser, "the WAF page at the edge [dark]"));
    AccessibilityBrowserTest.scheme(browser, "light");

    // the editor changes: the preview on reported samples belongs to the old text
    PolicyEditor.type(browser, "waf", "{\"rules\": [" + NO_ADMIN + "]}");
    browser.await("cleared", d -> browser.all("waf-reported-row").isEmpty() && browser.el("waf-reported-stale").isDisplayed() ? true : null);
  }

  static WebElement node(String id, String sync) {
    return browser.all("waf-node").stream().filter(e -> id.equals(e.getAttribute("data-node-id")) && sync.equals(e.getAttribute("data-sync")))
        .findFirst().orElse(null);
  }

  static WebElement traffic(String evaluated) {
    return browser.all("waf-traffic-route").stream().filter(e -> route.equals(e.getAttribute("data-route-id"))
        && evaluated.equals(e.getAttribute("data-evaluated"))).findFirst().orElse(null);
  }

  static WebElement chartLatest(String evaluated) {
    return browser.all("waf-traffic-chart-latest").stream().filter(e -> route.equals(e.getAttribute("data-route-id"))
        && evaluated.equals(e.getAttribute("data-evaluated"))).findFirst().orElse(null);
  }

  static String id(JsonObject enrolled) {
    return enrolled.getJsonObject("node").getString("id");
  }

  /**
   * A heartbeat of {@code node} with its agent credential: the routes version it was sent, and unless
   * {@code evaluated} is negative, the traffic policy it enforces (version 1, probe passed, one denied
   * sample) and the route's WAF counters.
   */
  static void report(JsonObject node, int evaluated, int denied, int wouldDeny) {
    String path = "/v1/nodes/" + id(node) + "/heartbeat";
    String agent = node.getJsonObject("credential").getString("token");
    if (!node.containsKey("routes_version")) { // the first heartbeat: the routes block this node is sent, as an agent's first
      HttpResponse<Buffer> first = http.send(HttpMethod.POST, app.coordinatorPort(), path, agent, new JsonObject());
      assertEquals(200, first.statusCode(), first.bodyAsString());
      node.put("routes_version", first.bodyAsJsonObject().getJsonObject("ingress_routes").getString("version"));
    }
    JsonObject ingress = new JsonObject().put("version", node.getString("routes_version")).put("routes", new JsonObject());
    if (evaluated >= 0) {
      long now = System.currentTimeMillis() / 1000;
      ingress.put("waf", new JsonObject().put("version", "1").put("enforce", 1).putNull("shadow").putNull("error")
          .put("probe", new JsonObject().put("version", "1").put("passed", true).put("status", 403).put("at", now).putNull("detail"))
          .put("samples", new JsonArray().add(new JsonObject().put("at", now - 60).put("route", route).put("rule", "no-admin").put("outcome", "deny")
              .put("status", 403).put("request", new JsonObject().put("method", "GET").put("target", "/admin/users?token=[redacted]")
                  .put("client_ip", "192.0.2.7").putNull("body").put("headers", new JsonArray().add(new JsonArray().add("user-agent").add("curl/8")))))));
      ingress.getJsonObject("routes").put(route, new JsonObject().put("requests", evaluated).put("errors", 0).put("active", 0).put("bytes_in", 0)
          .put("bytes_out", 0).putNull("serial").put("status_classes", new JsonObject().put("2xx", evaluated - denied).put("3xx", 0).put("4xx", denied).put("5xx", 0))
          .put("waf", new JsonObject().put("evaluated", evaluated).put("denied", denied).put("logged", 0).put("rate_limited", 0).put("would_deny", wouldDeny)
              .put("errors", 0).put("busy", 0).put("rules", new JsonObject().put("no-admin", denied))));
    }
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, app.coordinatorPort(), path, agent, new JsonObject().put("ingress_routes", ingress));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  static JsonObject enroll(String name, String tag) {
    return send(HttpMethod.POST, "/v1/nodes", new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", "wt").put("environment", "prod")
        .put("tags", new JsonArray().add(tag)), 201);
  }

  static JsonObject send(HttpMethod method, String path, JsonObject body, int expect) {
    HttpResponse<Buffer> r = http.send(method, app.coordinatorPort(), path, cluster.admin(), body);
    assertEquals(expect, r.statusCode(), r.bodyAsString());
    return r.body() == null || r.body().length() == 0 ? null : r.bodyAsJsonObject();
  }
}
