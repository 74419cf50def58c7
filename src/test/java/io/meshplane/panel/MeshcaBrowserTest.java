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
 * of time to expiry, the latest revocations and the place kept for the rotation; on the node page the
 * current certificate, revoked with a reason after a confirmation, and no revoke button for a viewer.
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
    // the rotation's place, empty for now
    assertEquals(1, browser.driver().findElements(By.id("meshca-rotation")).size());
    browser.el("meshca-rotation");
    assertEquals(List.of(), browser.severeLogs(), "no CSP violation or script error");
    // the whole page in one picture (docs/img/meshca.png is one of these)
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 1400));
    browser.screenshot("meshca");
    browser.driver().manage().window().setSize(new org.openqa.selenium.Dimension(1280, 800));
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
    }
  }

  static String state(String serial) {
    return http.get(app.coordinatorPort(), "/v1/meshca/certificates/" + serial, cluster.admin()).bodyAsJsonObject().getString("state");
  }
}
