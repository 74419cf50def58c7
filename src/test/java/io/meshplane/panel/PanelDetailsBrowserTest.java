package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Http;
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
import org.openqa.selenium.Keys;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * Small things people trip over, in a real Chromium: the login explains the loop of a Secure cookie
 * over plain http; a confirmation focuses Cancel (Enter cancels); an unknown node has a not-found
 * page; a node's peers come a page at a time; the relay select shows the node's relay; the token form
 * wants a team and an environment before it sends anything.
 */
@Timeout(300)
class PanelDetailsBrowserTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;

  @BeforeAll
  static void start() {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    // replica 0 as for local plain http; replica 1 as shipped (Secure cookie), opened over plain http below
    cluster = TestCluster.of(2);
    app = cluster.start(0, Map.of("panel.cookie_secure", "false", "relays", RELAYS));
    cluster.start(1, Map.of("panel.cookie_secure", "true", "relays", RELAYS));
    http = cluster.http();
    PanelSession.user(app, "admin", "admin", "*", "*");
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800);
    browser.signIn("/#/login", "admin", PanelSession.PASSWORD);
    browser.el("nav-nodes");
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
  void aSecureCookieOverPlainHttpIsExplainedInsteadOfLooping() {
    Meshplane secure = cluster.replica(1);
    // 127.0.0.1 is a secure context to Chromium, which keeps Secure cookies there: a name is not
    try (Browser plain = new Browser("http://panel.test:" + secure.panelPort(), 1280, 800,
        "--host-resolver-rules=MAP panel.test 127.0.0.1")) {
      plain.signIn("/#/nodes", "admin", PanelSession.PASSWORD);
      WebElement why = plain.el("login-cookie-problem");
      assertEquals("http", why.getAttribute("data-protocol"));
      String text = plain.el("login-error").getText();
      assertTrue(text.contains("MESH_PANEL_COOKIE_SECURE=false") && text.contains("https"), text);
      assertTrue(plain.driver().getCurrentUrl().contains("#/login"), "still on the login page: " + plain.driver().getCurrentUrl());
      plain.screenshot("details-secure-cookie");
    }
  }

  @Test
  void aConfirmationFocusesCancelAndEnterCancels() {
    JsonObject node = enroll("keep-me", "tag:keep");
    browser.open("/#/nodes/" + node.getString("id"));
    browser.el("node-delete").click();
    browser.el("confirm-dialog");
    WebElement focused = browser.driver().switchTo().activeElement();
    assertEquals("confirm-cancel", focused.getAttribute("data-test"));
    focused.sendKeys(Keys.ENTER);
    browser.await("the dialog closed", d -> browser.all("confirm-dialog").isEmpty() ? true : null);
    assertEquals("node-delete", browser.driver().switchTo().activeElement().getAttribute("data-test"), "focus back on the button");
    assertEquals(200, http.get(app.coordinatorPort(), "/v1/nodes/" + node.getString("id"), cluster.admin()).statusCode(), "not deleted");
  }

  @Test
  void anUnknownNodeHasANotFoundPage() {
    browser.open("/#/nodes/nd_doesnotexist");
    browser.el("node-not-found");
    assertEquals("Node not found", browser.el("page-title").getText());
    WebElement back = browser.el("node-not-found-back");
    assertTrue(back.getAttribute("href").endsWith("#/nodes"), back.getAttribute("href"));
    assertEquals("", browser.driver().findElement(Browser.test("error")).getText(), "no error box");
    assertTrue(browser.driver().getTitle().startsWith("Node not found"), browser.driver().getTitle());
    List<String> bad = new com.deque.html.axecore.selenium.AxeBuilder().analyze(browser.driver()).getViolations().stream()
        .filter(v -> "serious".equals(v.getImpact()) || "critical".equals(v.getImpact())).map(v -> v.getId()).toList();
    assertEquals(List.of(), bad, "axe on the not-found page");
    back.click();
    browser.el("nodes-table");
  }

  @Test
  void aNodesPeersComeFiftyAtATimeAndTheRelaySelectShowsItsRelay() {
    // 56 nodes that may all reach each other: 55 peers each, two pages
    HttpResponse<Buffer> policy = http.send(http.request(HttpMethod.PUT, app.coordinatorPort(), "/v1/acl?team=mesh&environment=prod")
        .bearerTokenAuthentication(cluster.admin()).putHeader("Content-Type", "application/json"),
        new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:mesh"))
            .put("dst", new JsonArray().add("tag:mesh")).put("ports", new JsonArray().add("tcp/22")))).encode().getBytes());
    assertEquals(200, policy.statusCode(), policy.bodyAsString());
    List<JsonObject> nodes = new ArrayList<>();
    for (int i = 0; i < 56; i++) nodes.add(enrollIn("mesh", String.format("peer-%02d", i), "tag:mesh"));
    JsonObject first = nodes.get(0);
    browser.open("/#/nodes/" + first.getString("id"));
    browser.await("the first page of peers", d -> browser.el("node-peers-page").getText().equals("Peers 1–50 of 55") ? true : null);
    assertEquals(50, browser.all("peer-row").size());
    assertEquals("true", browser.el("node-peers-prev").getAttribute("disabled"));
    browser.el("node-peers-next").click();
    browser.await("the second page", d -> browser.el("node-peers-page").getText().equals("Peers 51–55 of 55") ? true : null);
    assertEquals(5, browser.all("peer-row").size());
    assertEquals("true", browser.el("node-peers-next").getAttribute("disabled"));
    browser.el("node-peers-prev").click();
    browser.await("back on the first page", d -> browser.all("peer-row").size() == 50 ? true : null);

    // the relay select: the node's relay selected (and marked current); Move only once another is picked
    String relay = first.getString("relay");
    assertTrue(relay.equals("fra1") || relay.equals("ams1"), first.encode());
    Select select = new Select(browser.el("node-relay-select"));
    browser.await("the relays loaded", d -> select.getOptions().size() == 2 ? true : null);
    assertEquals(relay, select.getFirstSelectedOption().getAttribute("value"));
    assertTrue(select.getFirstSelectedOption().getText().endsWith("— current"), select.getFirstSelectedOption().getText());
    assertEquals("true", browser.el("node-relay-submit").getAttribute("disabled"), "no move to where it is");
    select.selectByValue(relay.equals("fra1") ? "ams1" : "fra1");
    assertEquals(null, browser.el("node-relay-submit").getAttribute("disabled"));
    browser.screenshot("details-node-peers");
  }

  @Test
  void aViewerSeesANodeWithoutItsActionsAndWithoutStrayText() {
    JsonObject node = enroll("viewed", "tag:viewed");
    PanelSession.user(app, "viewer", "viewer", "*", "*");
    try (Browser viewer = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800)) {
      viewer.signIn("/#/login", "viewer", PanelSession.PASSWORD);
      viewer.el("nav-nodes");
      viewer.open("/#/nodes/" + node.getString("id"));
      viewer.el("node-field-id");
      viewer.el("node-ingress");
      assertTrue(viewer.all("node-delete").isEmpty() && viewer.all("node-ingress-submit").isEmpty(), "no action for a viewer");
      // the page's own text: no "null" where a form the role cannot use would have been
      String text = viewer.driver().findElement(org.openqa.selenium.By.id("page")).getText();
      assertTrue(!text.matches("(?s).*\\bnull\\b.*"), text);
    }
  }

  @Test
  void theTokenFormWantsATeamAndAnEnvironment() {
    browser.open("/#/tokens");
    browser.type("token-create-name", "no-scope");
    assertEquals("true", browser.el("token-create-team").getAttribute("required"));
    browser.el("token-create-submit").click();
    String message = browser.el("token-create-error").getText();
    assertTrue(message.contains("team and environment"), message);
    assertEquals("true", browser.el("token-create-team").getAttribute("aria-invalid"));
    assertEquals("true", browser.el("token-create-environment").getAttribute("aria-invalid"));
    assertEquals("token-create-team", browser.driver().switchTo().activeElement().getAttribute("data-test"));
    browser.type("token-create-team", "web");
    browser.el("token-create-submit").click();
    browser.await("only the environment asked for", d -> browser.el("token-create-error").getText().contains("environment")
        && !browser.el("token-create-error").getText().contains("team") ? true : null);
    JsonArray tokens = http.get(app.coordinatorPort(), "/v1/auth/tokens?limit=1000", cluster.admin()).bodyAsJsonObject().getJsonArray("items");
    assertTrue(tokens.stream().noneMatch(t -> "no-scope".equals(((JsonObject) t).getString("name"))), "nothing was sent");
    browser.type("token-create-environment", "prod");
    browser.el("token-create-submit").click();
    browser.el("token-secret");
  }

  private static JsonObject enroll(String name, String tag) {
    return enrollIn("web", name, tag);
  }

  private static JsonObject enrollIn(String team, String name, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", io.meshplane.testing.Nodes.key()).put("team", team)
        .put("environment", "prod").put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes", cluster.admin(), body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonObject("node");
  }
}
