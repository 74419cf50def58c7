package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The Ingress page in a real headless Chromium against a real replica: an operator creates a route with
 * the form and sees it in the list with its status and its ingress node; a route the ACL policy blocks is
 * refused in the form naming the missing grant, and nothing is stored; a route moves up and is deleted with
 * its row's buttons; a viewer sees the routes and no
 * edit control.
 *
 * <p>The mesh, team {@code ing} / {@code prod}: edge-1 ({@code tag:edge}), web-1 ({@code tag:web}, web:8080
 * bound) and db-1 ({@code tag:db}, db:5432 bound); the policy lets tag:edge reach tag:web on tcp/8080 only.
 */
@Timeout(120)
class IngressBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static String web;
  static String db;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "ing-op", "operator", "ing", "prod");
    PanelSession.user(app, "ing-viewer", "viewer", "ing", "prod");
    enroll("edge-1", "tag:edge");
    web = enroll("web-1", "tag:web");
    db = enroll("db-1", "tag:db");
    services(web, "web:8080");
    services(db, "db:5432");
    JsonObject grant = new JsonObject().put("src", new JsonArray().add("tag:edge")).put("dst", new JsonArray().add("tag:web"))
        .put("ports", new JsonArray().add("tcp/8080"));
    HttpResponse<Buffer> p = http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/acl?team=ing&environment=prod", cluster.admin(),
        new JsonObject().put("grants", new JsonArray().add(grant)));
    assertEquals(200, p.statusCode(), p.bodyAsString());
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 1400);
    browser.signIn("/#/login", "ing-op", PanelSession.PASSWORD);
    browser.el("nav-ingress");
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
  void anOperatorCreatesARouteSeesABlockedOneRefusedAndAViewerCannotEdit() {
    browser.el("nav-ingress").click();
    browser.await("the first refresh", d -> browser.el("ingress-updated").getText().startsWith("Live") ? true : null);
    assertEquals("ing", browser.el("ingress-team").getAttribute("value"), "a team-scoped user's own team");

    // a route through the form: listed in place with its status, and its ingress node below
    fill("app.example.com", "/api", web, "web");
    browser.el("ingress-form-submit").click();
    WebElement row = browser.await("the new route", d -> rows().stream().filter(r -> "app.example.com".equals(r.getAttribute("data-hostname")))
        .findFirst().orElse(null));
    assertEquals("1", row.findElement(Browser.test("ingress-route-position")).getText());
    String status = row.findElement(Browser.test("ingress-route-status")).getText();
    assertEquals("active", status, "its status");
    assertTrue(row.getText().contains("web-1") && row.getText().contains("/api") && row.getText().contains("tag:edge"), row.getText());
    WebElement node = browser.await("the ingress node", d -> browser.all("ingress-node").stream()
        .filter(n -> n.getText().contains("edge-1")).findFirst().orElse(null));
    assertTrue(node.getText().contains("app.example.com/api"), "the routes it serves: " + node.getText());

    // a route to db-1: the policy has no grant for it; the form says which, and nothing is stored
    fill("db.example.com", "/", db, "db");
    browser.el("ingress-form-submit").click();
    WebElement blocked = browser.el("ingress-policy-blocks");
    String detail = browser.el("ingress-policy-blocks-detail").getText();
    assertTrue(detail.contains("no grant lets tag:edge reach db-1 (tag:db) tcp/5432"), detail);
    assertTrue(blocked.getText().contains("The ACL policy blocks this route"), blocked.getText());
    assertEquals("true", browser.el("ingress-form-tag").getAttribute("aria-invalid"));
    assertEquals("#/acl?team=ing&environment=prod", browser.el("ingress-policy-blocks-acl").getAttribute("href").replaceAll("^.*(#.*)$", "$1"));
    assertEquals(1, rows().size(), "the blocked route is not stored");
    List<String> severe = browser.severeLogs().stream().filter(l -> !l.contains("/api/v1/session") && !l.contains("/api/v1/ingress/routes")).toList();
    assertTrue(severe.isEmpty(), "no script error, failed file or CSP violation: " + severe);
    browser.screenshot("ingress");
    List<Rule> bad = new AxeBuilder().analyze(browser.driver()).getViolations().stream()
        .filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact())).toList();
    assertTrue(bad.isEmpty(), bad.stream().map(v -> v.getId() + " " + v.getNodes().stream().map(n -> String.valueOf(n.getTarget())).toList()).toList().toString());

    // moved and deleted with the row's buttons (each with If-Match from the list's ETag)
    JsonObject second = new JsonObject().put("team", "ing").put("environment", "prod").put("hostname", "www.example.com").put("path_prefix", "/")
        .put("target", new JsonObject().put("node", web).put("service", "web")).put("exposure", "mesh").put("tls", "meshca").put("ingress_tag", "tag:edge");
    HttpResponse<Buffer> c = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/ingress/routes", cluster.admin(), second);
    assertEquals(201, c.statusCode(), c.bodyAsString());
    browser.driver().navigate().refresh();
    WebElement www = browser.await("the second route", d -> row("www.example.com"));
    assertEquals("2", www.findElement(Browser.test("ingress-route-position")).getText());
    www.findElement(Browser.test("ingress-up")).click();
    browser.await("www moved up", d -> "1".equals(row("www.example.com").findElement(Browser.test("ingress-route-position")).getText()) ? true : null);
    assertEquals("2", row("app.example.com").findElement(Browser.test("ingress-route-position")).getText());
    row("app.example.com").findElement(Browser.test("ingress-delete")).click();
    browser.el("confirm-ok").click();
    browser.await("app deleted", d -> rows().size() == 1 && row("www.example.com") != null ? true : null);

    // a viewer (ingress:read only): the same routes, no form, no row button
    try (Browser viewer = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 900)) {
      viewer.signIn("/#/login", "ing-viewer", PanelSession.PASSWORD);
      viewer.el("nav-ingress").click();
      viewer.await("the route", d -> viewer.all("ingress-route").size() == 1 ? true : null);
      for (String control : List.of("ingress-form", "ingress-form-section", "ingress-edit", "ingress-up", "ingress-down", "ingress-delete")) {
        assertTrue(viewer.all(control).isEmpty(), "no " + control + " for a viewer");
      }
      List<String> headers = viewer.el("ingress-routes").findElements(By.cssSelector("thead th")).stream().map(WebElement::getText).toList();
      assertTrue(!headers.contains("Actions"), headers.toString());
    }
  }

  static WebElement row(String hostname) {
    return rows().stream().filter(r -> hostname.equals(r.getAttribute("data-hostname"))).findFirst().orElse(null);
  }

  static List<WebElement> rows() {
    return browser.all("ingress-route");
  }

  static void fill(String hostname, String path, String nodeId, String service) {
    browser.type("ingress-form-hostname", hostname);
    browser.type("ingress-form-path", path);
    browser.await("the target nodes", d -> browser.el("ingress-form-node").findElements(By.cssSelector("option[value='" + nodeId + "']")).isEmpty() ? null : true);
    new Select(browser.el("ingress-form-node")).selectByValue(nodeId);
    new Select(browser.el("ingress-form-service")).selectByValue(service);
    browser.type("ingress-form-tag", "tag:edge");
  }

  static String enroll(String name, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", "ing").put("environment", "prod")
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes", cluster.admin(), body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonObject("node").getString("id");
  }

  static void services(String id, String service) {
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/nodes/" + id + "/services", cluster.admin(),
        new JsonObject().put("services", new JsonArray().add(service)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
