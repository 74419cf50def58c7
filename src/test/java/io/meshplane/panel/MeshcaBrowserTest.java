package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.meshca.MeshcaModule;
import io.meshplane.testing.Browser;
import io.meshplane.testing.Certificates;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.Select;

/**
 * The MeshCA page and a node's certificate in a real Chromium: the chain, the counts by state, the chart
 * of time to expiry, the latest revocations; the rotation started, advanced through its phases and rolled
 * back with the page's buttons (the test's nodes report no {@code pki} block, so every preview is ready),
 * and the finished ones listed; on the node page the current certificate, revoked with a reason after a
 * confirmation. A viewer sees the rotation but no button (and no revoke button); a team-scoped admin sees
 * the rotation's buttons disabled with the reason.
 */
@Timeout(300)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MeshcaBrowserTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static Browser browser;
  static Nodes.Enrolled valid;
  static Nodes.Enrolled expired;
  static Nodes.Enrolled revoked;
  static MeshcaModule.Issuance.Issued validCert;
  static String revokedSerial;

  @BeforeAll
  static void start() throws Exception {
    assertTrue(Browser.installed(), "the dashboard tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    cluster = TestCluster.started(1, Map.of("panel.cookie_secure", "false"));
    app = cluster.replica(0);
    http = cluster.http();
    int port = app.coordinatorPort();
    // three nodes: one with a valid certificate, one whose certificate expired, one whose only certificate is revoked
    valid = Nodes.enroll(http, port, cluster.admin(), "ca-valid", "web", "prod");
    expired = Nodes.enroll(http, port, cluster.admin(), "ca-expired", "web", "prod");
    revoked = Nodes.enroll(http, port, cluster.admin(), "ca-revoked", "web", "prod");
    validCert = Certificates.issue(app, valid, "web", "prod");
    Certificates.shift(cluster, Certificates.issue(app, expired, "web", "prod").serial(), Duration.ofHours(-2));
    revokedSerial = Certificates.issue(app, revoked, "web", "prod").serial();
    assertEquals(200, http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + revokedSerial + "/revoke", cluster.admin(),
        new JsonObject().put("reason", "cessationOfOperation")).statusCode());
    PanelSession.user(app, "admin", "admin", "*", "*");
    browser = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800);
    browser.signIn("/#/login", "admin", PanelSession.PASSWORD);
    browser.el("nav-meshca");
    browser.severeLogs(); // read and dropped: the login page's first GET /session is a 401 by design
  }

  @AfterAll
  static void stop() {
    try {
      if (browser != null) browser.close();
    } finally {
      if (cluster != null) cluster.close();
    }
  }

  static String value(String hook) {
    return browser.await(hook, d -> {
      String v = browser.el(hook).getAttribute("data-value");
      return v == null || v.isEmpty() ? null : v;
    });
  }

  @Test
  @Order(1) // before the revocation below changes the counts
  void theMeshcaPageShowsTheChainTheCountsTheChartAndTheRevocations() {
    browser.el("nav-meshca").click();
    assertEquals("MeshCA", browser.el("page-title").getText());
    browser.await("the chain", d -> browser.all("meshca-authority").size() == 2 ? true : null);
    List<WebElement> chain = browser.all("meshca-authority");
    assertEquals("root", chain.get(0).getAttribute("data-kind"));
    assertEquals("intermediate", chain.get(1).getAttribute("data-kind"));
    assertEquals("active", chain.get(1).getAttribute("data-state"));
    String issuer = http.get(app.coordinatorPort(), "/v1/meshca/certificates/" + validCert.serial(), cluster.admin()).bodyAsJsonObject()
        .getString("issuer");
    assertEquals(issuer, chain.get(1).getAttribute("data-authority-id"));
    String expires = chain.get(1).findElement(Browser.test("meshca-authority-expires")).getText();
    assertTrue(expires.matches("in (89|90) d"), expires);

    assertEquals("1", value("meshca-count-valid"));
    assertEquals("0", value("meshca-count-expiring"));
    assertEquals("1", value("meshca-count-expired"));
    assertEquals("1", value("meshca-count-none"));
    assertEquals("1", value("meshca-count-revoked"));
    // the chart: uPlot's canvas, and its figures as text (the one unexpired current certificate, 12-24 h left)
    WebElement chart = browser.el("meshca-chart-expiry");
    assertTrue(!chart.findElements(By.tagName("canvas")).isEmpty(), "a canvas");
    assertEquals("1", browser.el("meshca-chart-expiry-latest").getAttribute("data-total"));
    assertTrue(chart.getAttribute("aria-label").contains("12–24 h: 1"), chart.getAttribute("aria-label"));

    browser.await("the revocation", d -> browser.all("meshca-revocation").size() == 1 ? true : null);
    WebElement rev = browser.all("meshca-revocation").get(0);
    assertEquals(revokedSerial, rev.getAttribute("data-serial"));
    assertTrue(rev.getText().contains("cessationOfOperation"), rev.getText());
    // the rotation's section: none in progress, automatic rotation on, nothing finished yet
    assertEquals(1, browser.driver().findElements(By.id("meshca-rotation")).size());
    browser.el("meshca-rotation");
    browser.el("meshca-rotation-none");
    assertEquals("true", browser.el("meshca-rotation-automatic").getAttribute("data-enabled"));
    assertEquals("none", browser.el("meshca-rotation-state").getAttribute("data-phase"));
    assertTrue(browser.all("meshca-rotation-past").isEmpty());
    assertTrue(browser.el("meshca-rotation-start-intermediate").isEnabled());
    assertTrue(browser.el("meshca-rotation-start-root").isEnabled());
    assertEquals(List.of(), browser.severeLogs(), "no CSP violation or script error");
    // the whole page in one picture (docs/img/meshca.png is one of these)
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 1400));
    browser.screenshot("meshca");
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 800));
  }

  @Test
  @Order(2)
  void anIntermediateRotationIsStartedAndAdvancedFromThePageAndARootRotationRolledBack() {
    browser.open("/#/meshca");
    browser.el("meshca-rotation-none");
    // Cancel starts nothing
    press("meshca-rotation-start-intermediate");
    assertTrue(browser.el("confirm-dialog").getText().contains("new intermediate"), browser.el("confirm-dialog").getText());
    browser.el("confirm-cancel").click();
    browser.await("the dialog closed", d -> browser.all("confirm-dialog").isEmpty() ? true : null);
    assertTrue(rotation().getValue("rotation") == null, "nothing started");

    press("meshca-rotation-start-intermediate");
    browser.el("confirm-ok").click();
    String id = awaitPhase("staged");
    JsonObject open = rotation().getJsonObject("rotation");
    assertEquals(id, open.getString("id"));
    assertEquals("intermediate", open.getString("kind"));
    assertEquals(false, open.getBoolean("automatic"));
    assertEquals("intermediate", browser.el("meshca-rotation-kind").getText());
    assertEquals("false", browser.el("meshca-rotation-started-by").getAttribute("data-automatic"));
    assertStepper("staged");
    WebElement preview = browser.el("meshca-rotation-preview");
    assertEquals("true", preview.getAttribute("data-ready"));
    assertEquals("distributing", preview.getAttribute("data-next-phase"));
    browser.await("the flash", d -> browser.el("flash").getText().contains("staged") ? true : null);
    // the chain shows the staged intermediate (the page reads it again when the rotation moves)
    String fresh = open.getString("new_intermediate");
    awaitAuthority(fresh, "staged");

    // through the phases with the buttons. The preview counts the online nodes that report a pki block: the node "valid"
    // heartbeats with one, first with a bundle it should not hold (a holdout), then with what each next phase needs
    assertEquals("Advance to distributing", browser.el("meshca-rotation-advance").getText());
    press("meshca-rotation-advance");
    assertTrue(browser.el("confirm-dialog").getText().contains("distributing"), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    assertEquals(id, awaitPhase("distributing"));
    assertStepper("distributing");
    assertEquals("distributing", rotation().getJsonObject("rotation").getString("phase"));
    beat(valid, 1, new JsonObject().put("bundle", "not-the-bundle"));
    WebElement holdout = browser.await("the holdout", d -> browser.all("meshca-rotation-holdout").isEmpty() ? null
        : browser.all("meshca-rotation-holdout").get(0));
    assertEquals(valid.id(), holdout.getAttribute("data-node-id"));
    assertTrue(holdout.getAttribute("href").endsWith("#/nodes/" + valid.id()), holdout.getAttribute("href"));
    assertEquals("false", browser.el("meshca-rotation-preview").getAttribute("data-ready"));
    assertEquals("0 of 1 online node ready; 0 stale nodes counted apart", browser.el("meshca-rotation-progress").getText());
    assertTrue(!browser.el("meshca-rotation-advance").isEnabled(), "advance waits for the holdout");
    assertEquals("Not yet: 1 online node does not hold what issuing needs.", browser.el("meshca-rotation-advance-reason").getText());
    String bundle = rotation().getJsonObject("preview").getString("bundle");
    beat(valid, 2, new JsonObject().put("bundle", bundle));
    awaitReady();
    assertEquals("1 of 1 online node ready; 0 stale nodes counted apart", browser.el("meshca-rotation-progress").getText());
    assertTrue(browser.all("meshca-rotation-holdout").isEmpty());

    press("meshca-rotation-advance");
    browser.el("confirm-ok").click();
    assertEquals(id, awaitPhase("issuing"));
    assertStepper("issuing");
    // retiring needs a certificate of the new intermediate too: the node reports one
    beat(valid, 3, new JsonObject().put("bundle", bundle).put("issuer", fresh));
    awaitReady();
    assertEquals("Advance to retired", browser.el("meshca-rotation-advance").getText());
    press("meshca-rotation-advance");
    assertTrue(browser.el("confirm-dialog").getText().contains("can no longer be rolled back"), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    awaitPhase("none");
    browser.el("meshca-rotation-none");
    awaitAuthority(fresh, "active");
    awaitAuthority(open.getString("old_intermediate"), "retired");
    WebElement done = browser.await("the finished rotation", d -> browser.all("meshca-rotation-past").size() == 1 ? browser.all("meshca-rotation-past").get(0)
        : null);
    assertEquals(id, done.getAttribute("data-rotation-id"));
    assertEquals("retired", done.getAttribute("data-phase"));
    assertEquals("intermediate", done.getAttribute("data-kind"));
    assertEquals("retired", rotation().getJsonArray("history").getJsonObject(0).getString("phase"));

    // a root rotation, one step in, rolled back
    press("meshca-rotation-start-root");
    assertTrue(browser.el("confirm-dialog").getText().contains("new root"), browser.el("confirm-dialog").getText());
    browser.el("confirm-ok").click();
    String second = awaitPhase("staged");
    assertEquals("root", browser.el("meshca-rotation-kind").getText());
    press("meshca-rotation-advance");
    browser.el("confirm-ok").click();
    assertEquals(second, awaitPhase("distributing"));
    assertStepper("distributing");
    // the new root is in the bundle now; the node still holds the old one: it holds the rotation back
    beat(valid, 4, new JsonObject().put("bundle", bundle).put("issuer", fresh));
    browser.await("the holdout", d -> browser.all("meshca-rotation-holdout").size() == 1 ? true : null);
    assertTrue(!browser.el("meshca-rotation-advance").isEnabled(), "advance waits for the holdout");
    assertTrue(browser.el("meshca-rotation-rollback").isEnabled(), "a rollback does not wait");
    // the whole page with a rotation open and one finished (docs/img/meshca.png is this one)
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 2300));
    ((org.openqa.selenium.JavascriptExecutor) browser.driver()).executeScript("window.scrollTo(0, 0);");
    browser.screenshot("meshca-rotation");
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 800));
    press("meshca-rotation-rollback");
    WebElement dialog = browser.el("confirm-dialog");
    assertTrue(dialog.getText().contains("Roll"), dialog.getText());
    browser.el("confirm-ok").click();
    awaitPhase("none");
    browser.await("two finished rotations", d -> browser.all("meshca-rotation-past").size() == 2 ? true : null);
    WebElement rolled = browser.all("meshca-rotation-past").get(0);
    assertEquals(second, rolled.getAttribute("data-rotation-id"));
    assertEquals("rolled_back", rolled.getAttribute("data-phase"));
    assertEquals("root", rolled.getAttribute("data-kind"));
    JsonObject after = rotation();
    assertTrue(after.getValue("rotation") == null, after.encode());
    assertEquals("rolled_back", after.getJsonArray("history").getJsonObject(0).getString("phase"));
    awaitAuthority(fresh, "active"); // the intermediate of the first rotation signs again
    assertEquals(List.of(), browser.severeLogs(), "no CSP violation or script error");
  }

  @Test
  void aTeamScopedAdminSeesTheRotationsButtonsDisabledWithTheReason() throws Exception {
    PanelSession.user(app, "ca-team-admin", "admin", "web", "prod");
    try (Browser scoped = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800)) {
      scoped.signIn("/#/login", "ca-team-admin", PanelSession.PASSWORD);
      scoped.el("nav-meshca").click();
      scoped.el("meshca-rotation-none");
      for (String b : List.of("start-intermediate", "start-root")) {
        WebElement button = scoped.el("meshca-rotation-" + b);
        assertTrue(!button.isEnabled(), b + " is disabled");
        String reason = scoped.el("meshca-rotation-" + b + "-reason").getText();
        assertTrue(reason.contains("every team and environment") && reason.contains("web / prod"), reason);
      }
    }
  }

  @Test
  void aNodesCertificateIsShownAndRevokedWithAReasonAfterAConfirmation() {
    Nodes.Enrolled n = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "ca-revoke-me", "web", "prod");
    MeshcaModule.Issuance.Issued c;
    try {
      c = Certificates.issue(app, n, "web", "prod");
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    browser.open("/#/nodes/" + n.id());
    browser.await("the certificate", d -> browser.all("node-certificate-serial").isEmpty() ? null : true);
    assertEquals(c.serial(), browser.el("node-certificate-serial").getText());
    assertEquals("valid", browser.el("node-certificate-state").getText());
    String issuer = http.get(app.coordinatorPort(), "/v1/meshca/certificates/" + c.serial(), cluster.admin()).bodyAsJsonObject()
        .getString("issuer");
    assertEquals(issuer, browser.el("node-certificate-issuer").getText());

    // Cancel keeps it
    browser.el("node-certificate-revoke").click();
    browser.el("confirm-dialog");
    browser.el("confirm-cancel").click();
    browser.await("the dialog closed", d -> browser.all("confirm-dialog").isEmpty() ? true : null);
    assertEquals("valid", state(c.serial()));
    // a reason, then Revoke
    browser.el("node-certificate-revoke").click();
    new Select(browser.el("node-certificate-reason")).selectByValue("keyCompromise");
    browser.el("confirm-ok").click();
    browser.await("the flash", d -> browser.el("flash").getText().contains("revoked") ? true : null);
    browser.await("no current certificate", d -> browser.all("node-certificate-none").isEmpty() ? null : true);
    JsonObject after = http.get(app.coordinatorPort(), "/v1/meshca/certificates/" + c.serial(), cluster.admin()).bodyAsJsonObject();
    assertEquals("revoked", after.getString("state"));
    assertEquals("keyCompromise", after.getString("reason"));
    assertEquals(List.of(), browser.severeLogs(), "no CSP violation or script error");
    browser.screenshot("meshca-node-revoked");
  }

  @Test
  void aViewerSeesTheCertificateButNoRevokeButton() throws Exception {
    PanelSession.user(app, "ca-viewer", "viewer", "web", "prod");
    try (Browser viewer = new Browser("http://127.0.0.1:" + app.panelPort(), 1280, 800)) {
      viewer.signIn("/#/login", "ca-viewer", PanelSession.PASSWORD);
      viewer.el("nav-meshca");
      viewer.open("/#/nodes/" + valid.id());
      viewer.await("the certificate", d -> viewer.all("node-certificate-serial").isEmpty() ? null : true);
      assertEquals(validCert.serial(), viewer.el("node-certificate-serial").getText());
      assertTrue(viewer.all("node-certificate-revoke").isEmpty(), "no revoke button without meshca:revoke");
      // the rotation's section, read only
      viewer.el("nav-meshca").click();
      viewer.await("the rotation read", d -> "loading".equals(viewer.el("meshca-rotation-state").getAttribute("data-phase")) ? null : true);
      viewer.el("meshca-rotation-automatic");
      viewer.await("the finished rotations", d -> viewer.all("meshca-rotation-past").isEmpty() ? null : true);
      for (String b : List.of("start-intermediate", "start-root", "advance", "rollback")) {
        assertTrue(viewer.all("meshca-rotation-" + b).isEmpty(), "no " + b + " button without meshca:manage");
      }
      assertTrue(!viewer.all("meshca-rotation-actions").get(0).isDisplayed());
    }
  }

  /** Clicks a button once it is enabled (a refresh may redraw it meanwhile: a stale one is a retry). */
  static void press(String hook) {
    browser.await(hook + " enabled", d -> {
      WebElement b = browser.el(hook);
      if (!b.isEnabled()) return null;
      b.click();
      return true;
    });
  }

  /** A heartbeat of {@code n} with this {@code pki} block (what the node says it holds). */
  static void beat(Nodes.Enrolled n, int seq, JsonObject pki) {
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        Nodes.beat(seq).put("pki", pki)).statusCode());
  }

  static void awaitReady() {
    browser.await("the preview ready", d -> "true".equals(browser.el("meshca-rotation-preview").getAttribute("data-ready")) ? true : null);
  }

  /** Waits for the rotation section to show {@code phase} ({@code none}: no rotation open); the open rotation's id. */
  static String awaitPhase(String phase) {
    return browser.await("the rotation at " + phase, d -> {
      WebElement s = browser.el("meshca-rotation-state");
      return phase.equals(s.getAttribute("data-phase")) ? s.getAttribute("data-rotation-id") : null;
    });
  }

  /** The stepper marks {@code phase} current, the ones before done, the ones after to come. */
  static void assertStepper(String phase) {
    List<String> phases = List.of("staged", "distributing", "issuing", "retired");
    List<WebElement> steps = browser.all("meshca-rotation-step");
    assertEquals(4, steps.size());
    int at = phases.indexOf(phase);
    for (int i = 0; i < 4; i++) {
      assertEquals(phases.get(i), steps.get(i).getAttribute("data-phase"));
      assertEquals(i < at ? "done" : i == at ? "current" : "todo", steps.get(i).getAttribute("data-state"), phases.get(i));
      assertEquals(i == at ? "step" : null, steps.get(i).getAttribute("aria-current"));
    }
  }

  static void awaitAuthority(String id, String state) {
    browser.await("the authority " + id + " " + state, d -> browser.all("meshca-authority").stream()
        .anyMatch(a -> id.equals(a.getAttribute("data-authority-id")) && state.equals(a.getAttribute("data-state"))) ? true : null);
  }

  static JsonObject rotation() {
    return http.get(app.coordinatorPort(), "/v1/meshca/rotation", cluster.admin()).bodyAsJsonObject();
  }

  static String state(String serial) {
    return http.get(app.coordinatorPort(), "/v1/meshca/certificates/" + serial, cluster.admin()).bodyAsJsonObject().getString("state");
  }
}
