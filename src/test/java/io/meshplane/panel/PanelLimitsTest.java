package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The panel's time and rate bounds with small settings: a session's idle timeout and absolute
 * lifetime, the request rate per session, and the login attempts per source address. The tests run in
 * order: every login of the class counts against the one address (127.0.0.1) the last test exhausts.
 */
@Timeout(120)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PanelLimitsTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  /** When the class's first login was sent: the per-address bucket has refilled since, one login per 10 s. */
  static long firstLogin;
  static final String LIMITED_API = "mesh_panel_rate_limited_total{limit=\"api\"}";
  static final String LIMITED_LOGIN = "mesh_panel_rate_limited_total{limit=\"login\"}";
  static final String LOGINS_FAILURE = "mesh_panel_logins_total{outcome=\"failure\"}";
  static final String LOGINS_RATE_LIMITED = "mesh_panel_logins_total{outcome=\"rate_limited\"}";

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("panel.session_idle", "2s", "panel.session_lifetime", "5s", "panel.api_rate", "2",
        "panel.api_burst", "3", "panel.login_per_address", "6", "panel.cookie_secure", "false"));
    app = cluster.replica(0);
    http = cluster.http();
    PanelSession.user(app, "pat", "viewer", "team-a", "prod");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  @Order(1)
  void aSessionUnusedForTheIdleTimeoutEnds() throws InterruptedException {
    firstLogin = System.currentTimeMillis();
    PanelSession s = PanelSession.signIn(http, app.panelPort(), "pat");
    String cookie = s.cookie();
    assertTrue(cookie.startsWith("meshplane_session="), "no __Host- prefix without Secure: " + cookie);
    assertEquals(200, s.get(app.panelPort(), "/api/v1/session").statusCode());
    Thread.sleep(3000); // not synchronisation: the session stays unused past its idle timeout (2 s); any poll would use it
    assertEquals(401, s.get(app.panelPort(), "/api/v1/session").statusCode());
  }

  @Test
  @Order(2)
  void aSessionInUseStillEndsAtItsAbsoluteLifetime() throws InterruptedException {
    PanelSession s = PanelSession.signIn(http, app.panelPort(), "pat");
    long start = System.currentTimeMillis();
    int status = 200;
    while (status == 200 && System.currentTimeMillis() - start < 10_000) {
      Thread.sleep(1000); // not synchronisation: a person's pace of use, within the idle timeout (2 s) and the rate (2/s)
      status = s.get(app.panelPort(), "/api/v1/session").statusCode();
    }
    long lived = System.currentTimeMillis() - start;
    assertEquals(401, status);
    assertTrue(lived >= 4000 && lived <= 8000, "ended after " + lived + " ms of use (lifetime 5 s, idle 2 s)");
  }

  @Test
  @Order(3)
  void aSessionAboveItsRateGets429WithRetryAfter() {
    PanelSession s = PanelSession.signIn(http, app.panelPort(), "pat");
    double before = metric(LIMITED_API);
    List<HttpResponse<Buffer>> answers = new ArrayList<>();
    for (int i = 0; i < 8; i++) answers.add(s.get(app.panelPort(), "/api/v1/nodes"));
    long limited = answers.stream().filter(r -> r.statusCode() == 429).count();
    assertTrue(limited >= 3, "burst 3, 2/s: most of 8 quick requests are refused, got " + limited);
    HttpResponse<Buffer> r = answers.stream().filter(x -> x.statusCode() == 429).findFirst().orElseThrow();
    assertEquals("rate_limited", r.bodyAsJsonObject().getString("code"));
    assertTrue(Integer.parseInt(r.getHeader("Retry-After")) >= 1);
    assertEquals((double) limited, metric(LIMITED_API) - before, "every 429 of the session counted, and nothing else");
  }

  @Test
  @Order(4)
  void loginAttemptsFromOneAddressAreBoundedWhateverTheUsername() {
    double failuresBefore = metric(LOGINS_FAILURE);
    double limitedBefore = metric(LOGINS_RATE_LIMITED);
    double rejectedBefore = metric(LIMITED_LOGIN);
    int tries = 0;
    HttpResponse<Buffer> r;
    do {
      r = PanelSession.login(http, app.panelPort(), "guess-" + tries, "some password guess");
      tries++;
    } while (r.statusCode() == 401 && tries < 10);
    assertEquals(429, r.statusCode(), "after " + tries + " tries: " + r.bodyAsString());
    // 6 per minute, 3 used by the earlier logins of this class: refused at the 4th try, or later by one
    // for every 10 s since the first login (the bucket refills evenly: the earlier tests take ~10 s)
    long refilled = (System.currentTimeMillis() - firstLogin) / 10_000;
    assertTrue(tries >= 4 && tries <= 4 + refilled, "refused at try " + tries + ", " + refilled + " logins refilled");
    assertTrue(Integer.parseInt(r.getHeader("Retry-After")) >= 1);
    // and the login is refused before any password is checked: the right one is refused too
    assertEquals(429, PanelSession.login(http, app.panelPort(), "pat", PanelSession.PASSWORD).statusCode());
    assertEquals(401, http.send(HttpMethod.GET, app.panelPort(), "/api/v1/session", null, null).statusCode());
    assertEquals(tries - 1.0, metric(LOGINS_FAILURE) - failuresBefore, "the guesses answered 401");
    assertEquals(2.0, metric(LOGINS_RATE_LIMITED) - limitedBefore, "the guess and the right password answered 429");
    assertEquals(2.0, metric(LIMITED_LOGIN) - rejectedBefore, "the login's rate-limit rejections");
  }

  /** The value of one series (name and labels as Prometheus shows them) on the replica's /metrics. */
  private static double metric(String series) {
    HttpResponse<Buffer> r = http.get(app.panelPort(), "/metrics");
    assertEquals(200, r.statusCode());
    for (String line : r.bodyAsString().split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
    }
    throw new AssertionError("no series " + series + " in /metrics:\n" + r.bodyAsString());
  }
}
