package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Browser;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.Keycloak;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;

/**
 * Single sign-on against a real Keycloak (started once for the class, see {@link Keycloak}) and two
 * real replicas of one cluster: people sign in through Keycloak's own login form in a real headless
 * Chromium and land on the dashboard with the role, team and environment their groups map to; a
 * person whose groups map to nothing is refused, told why, and audited; the callback works on
 * another replica than the one the login started on, once, and only for the browser that started
 * it; a code is useless without its login's PKCE verifier; logging out ends the panel's session and
 * offers Keycloak's. A third replica whose IdP cannot be reached starts anyway and says so.
 */
@Timeout(600)
class OidcKeycloakTest {
  static final String CALLBACK = "/api/v1/session/oidc/callback";
  static long classStart;
  static Keycloak kc;
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String base;
  static Map<String, String> settings;

  @BeforeAll
  static void start() throws Exception {
    assertTrue(Browser.installed(), "the single sign-on tests need Debian's chromium and chromium-driver (.ci/run installs them)");
    classStart = System.nanoTime();
    int panelPort = FreePorts.next();
    base = "http://127.0.0.1:" + panelPort;
    kc = Keycloak.start(base + CALLBACK, base + "/*");
    System.out.println("Keycloak started in " + kc.startTime.toMillis() + " ms");
    settings = new HashMap<>();
    settings.put("panel.cookie_secure", "false");
    settings.put("panel.login_per_address", "1000"); // every login of this class comes from 127.0.0.1
    settings.put("panel.oidc.issuer", kc.issuer());
    settings.put("panel.oidc.client_id", Keycloak.CLIENT_ID);
    settings.put("panel.oidc.client_secret", kc.clientSecret());
    // behind a load balancer every replica has the same callback: here, replica a's port
    settings.put("panel.oidc.redirect_uri", base + CALLBACK);
    settings.put("panel.oidc.button_label", "Keycloak");
    settings.put("panel.oidc.mappings", new JsonArray()
        .add(new JsonObject().put("claim", "groups").put("value", "mesh-admins").put("role", "admin").put("team", "*").put("environment", "*"))
        .add(new JsonObject().put("claim", "groups").put("value", "mesh-viewers").put("role", "viewer").put("team", "web")
            .put("environment", "*"))
        .encode());
    cluster = TestCluster.of(4);
    Map<String, String> first = new HashMap<>(settings);
    first.put("panel.port", String.valueOf(panelPort));
    a = cluster.start(0, first);
    b = cluster.start(1, settings);
    http = cluster.http();
    Await.until("Keycloak discovered by both replicas", 30_000, () -> info(a).getBoolean("available") && info(b).getBoolean("available"));
    PanelSession.user(a, "admin", "admin", "*", "*");
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (cluster != null) cluster.close();
    } finally {
      if (kc != null) kc.close();
    }
    Duration total = Duration.ofNanos(System.nanoTime() - classStart);
    String line = "OidcKeycloakTest: Keycloak start " + (kc == null ? "-" : kc.startTime.toMillis() + " ms") + ", class " + total.toMillis()
        + " ms\n";
    System.out.print(line);
    Files.writeString(Path.of("target", "oidc-keycloak-timings.txt"), line);
  }

  static JsonObject info(Meshplane m) {
    return http.get(m.panelPort(), "/api/v1/session/oidc").bodyAsJsonObject();
  }

  /** A GET that does not follow redirects, with the cookies given ({@code name=value; …}). */
  static HttpResponse<Buffer> get(int port, String pathAndQuery, String cookies) {
    HttpRequest<Buffer> r = http.request(HttpMethod.GET, port, pathAndQuery).followRedirects(false);
    if (cookies != null) r.putHeader("Cookie", cookies);
    return http.send(r);
  }

  /** {@code name=value} of the Set-Cookie named {@code name} in an answer, or null. */
  static String setCookie(HttpResponse<Buffer> r, String name) {
    for (String c : r.cookies()) {
      if (c.startsWith(name + "=")) return c;
    }
    return null;
  }

  static String pair(String setCookie) {
    return setCookie.substring(0, setCookie.indexOf(';'));
  }

  @Test
  void theLoginPageLearnsThatSingleSignOnIsOnAndWhereToSignOutOfTheIdp() {
    JsonObject info = info(a);
    assertEquals(true, info.getBoolean("enabled"));
    assertEquals(true, info.getBoolean("available"));
    assertEquals("Keycloak", info.getString("label"));
    assertTrue(info.getString("end_session_url").startsWith(kc.issuer() + "/protocol/openid-connect/logout?client_id=meshplane-panel"
        + "&post_logout_redirect_uri="), info.encode());
  }

  @Test
  void anAdminSignsInOnKeycloaksFormLandsOnTheDashboardAndLogsOutOfBoth() {
    try (Browser browser = new Browser(base, 1280, 800)) {
      browser.open("/#/login");
      WebElement start = browser.el("login-sso-start");
      assertEquals("Sign in with Keycloak", start.getText());
      browser.screenshot("login-sso");
      start.click();
      keycloakForm(browser, "alice");
      browser.await("the dashboard for alice", d -> "alice".equals(d.findElement(Browser.test("header-username")).getText()));
      assertEquals("admin", browser.el("header-role").getText());
      assertEquals("* / *", browser.el("header-scope").getText());
      browser.screenshot("dashboard-after-sso");

      browser.el("logout").click();
      browser.el("login-sso-signed-out");
      browser.screenshot("login-sso-signed-out");
      assertAccessible(browser);
      browser.el("login-sso-logout").click();
      // Keycloak asks whether to sign out (no id_token_hint is sent: the panel keeps no token)
      browser.await("Keycloak's logout page", d -> displayed(d, By.id("kc-logout")));
      browser.driver().findElement(By.id("kc-logout")).click();
      browser.await("back on the panel's login page", d -> d.getCurrentUrl().startsWith(base) && displayed(d, Browser.test("login-sso-start")));
      // signed out at Keycloak too: the next sign-in asks for the password again
      browser.el("login-sso-start").click();
      browser.await("Keycloak's login form again", d -> displayed(d, By.id("username")));
    }
    JsonArray logins = adminGet("/api/v1/audit?action=session.oidc_login").getJsonArray("items");
    assertTrue(logins.stream().map(JsonObject.class::cast).anyMatch(e -> "success".equals(e.getString("outcome"))
        && "alice".equals(e.getJsonObject("actor").getString("name"))), logins.encodePrettily());
  }

  @Test
  void aViewerIsMappedToTeamWebAndBecomesAPanelUserOfSourceOidc() throws Exception {
    try (Browser browser = new Browser(base, 1280, 800)) {
      browser.open("/#/login");
      browser.el("login-sso-start").click();
      keycloakForm(browser, "bob");
      browser.await("the dashboard for bob", d -> "bob".equals(d.findElement(Browser.test("header-username")).getText()));
      assertEquals("viewer", browser.el("header-role").getText());
      assertEquals("web / *", browser.el("header-scope").getText());
    }
    JsonObject bob = adminGet("/api/v1/users?limit=100").getJsonArray("items").stream().map(JsonObject.class::cast)
        .filter(u -> "bob".equals(u.getString("username"))).findFirst().orElseThrow();
    assertEquals("oidc", bob.getString("source"));
    assertEquals("viewer", bob.getString("role"));
    assertEquals("web", bob.getString("team"));
    // an IdP user has no password here: the password form refuses it like a wrong password, and none can be set
    assertEquals(401, PanelSession.login(http, a.panelPort(), "bob", Keycloak.PASSWORD).statusCode());
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "admin");
    String path = "/api/v1/users/" + bob.getString("id");
    assertEquals(409, admin.send(HttpMethod.PATCH, a.panelPort(), path, new JsonObject().put("password", "a long enough password")).statusCode());
    // disabled in the panel: refused whatever the IdP says (a local lock-out), until enabled again
    assertEquals(200, admin.send(HttpMethod.PATCH, a.panelPort(), path, new JsonObject().put("disabled", true)).statusCode());
    KeycloakLogin person = new KeycloakLogin();
    Started s = startOn(a);
    String callback = callbackPath(person.login(s.authorizeUrl(), "bob", Keycloak.PASSWORD));
    refusedWith(get(a.panelPort(), callback, s.binding()), "disabled");
    assertEquals(200, admin.send(HttpMethod.PATCH, a.panelPort(), path, new JsonObject().put("disabled", false)).statusCode());
    Started again = startOn(b);
    String ok = callbackPath(person.login(again.authorizeUrl(), "bob", Keycloak.PASSWORD));
    assertEquals("/#/", get(b.panelPort(), ok, again.binding()).getHeader("Location"));
  }

  @Test
  void aPersonWhoseGroupsMapToNoRoleIsRefusedToldWhyAndAudited() {
    try (Browser browser = new Browser(base, 1280, 800)) {
      browser.open("/#/login");
      browser.el("login-sso-start").click();
      keycloakForm(browser, "carol");
      WebElement error = browser.el("login-sso-error");
      assertEquals("no_role", error.getAttribute("data-code"));
      assertTrue(error.getText().contains("not given any role"), error.getText());
      assertTrue(browser.driver().getCurrentUrl().endsWith("/#/login?error=no_role"), browser.driver().getCurrentUrl());
      assertTrue(browser.all("header-username").stream().noneMatch(WebElement::isDisplayed));
      browser.screenshot("login-sso-refused");
      assertAccessible(browser);
    }
    JsonArray events = adminGet("/api/v1/audit?action=session.oidc_login").getJsonArray("items");
    JsonObject denied = events.stream().map(JsonObject.class::cast).filter(e -> "denied".equals(e.getString("outcome"))
        && "carol".equals(e.getJsonObject("actor").getString("name"))).findFirst().orElseThrow(() -> new AssertionError(events.encode()));
    assertFalse(denied.getJsonObject("details").getString("subject", "").isEmpty(), denied.encode());
    assertTrue(denied.getJsonObject("details").getString("reason").contains("no mapping"), denied.encode());
    // the subject, never a token or a code
    assertFalse(denied.encode().contains("eyJ"), denied.encode());
    assertFalse(adminGet("/api/v1/users?limit=100").encode().contains("\"carol\""), "a refused person is not made a user");
  }

  /** No serious or critical axe-core violation on the page as it is. */
  static void assertAccessible(Browser browser) {
    List<String> bad = new com.deque.html.axecore.selenium.AxeBuilder().analyze(browser.driver()).getViolations().stream()
        .filter(r -> "serious".equals(r.getImpact()) || "critical".equals(r.getImpact())).map(r -> r.getId() + " " + r.getNodes().size())
        .toList();
    assertEquals(List.of(), bad, "axe-core violations on " + browser.driver().getCurrentUrl());
  }

  static boolean displayed(WebDriver d, By by) {
    return d.findElements(by).stream().anyMatch(WebElement::isDisplayed);
  }

  /** Types the person's username and password on Keycloak's own login page and submits it. */
  static void keycloakForm(Browser browser, String username) {
    WebElement user = browser.await("Keycloak's login form", d -> d.findElements(By.id("username")).stream().filter(WebElement::isDisplayed)
        .findFirst().orElse(null));
    assertTrue(browser.driver().getCurrentUrl().startsWith(kc.issuer()), browser.driver().getCurrentUrl());
    user.sendKeys(username);
    browser.driver().findElement(By.id("password")).sendKeys(Keycloak.PASSWORD);
    browser.driver().findElement(By.id("kc-login")).click();
  }

  static JsonObject adminGet(String path) {
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "admin");
    HttpResponse<Buffer> r = admin.get(a.panelPort(), path);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** A login started on {@code m}: the IdP's URL and the binding cookie ({@code name=value}). */
  record Started(String authorizeUrl, String binding) {
    String state() {
      return query(authorizeUrl, "state");
    }
  }

  static Started startOn(Meshplane m) {
    return startOn(m, null);
  }

  /** The same from a browser holding {@code cookies} (its panel session's {@code name=value}). */
  static Started startOn(Meshplane m, String cookies) {
    HttpResponse<Buffer> r = get(m.panelPort(), "/api/v1/session/oidc/start", cookies);
    assertEquals(302, r.statusCode(), r.bodyAsString());
    String location = r.getHeader("Location");
    assertTrue(location.startsWith(kc.issuer() + "/protocol/openid-connect/auth?"), location);
    String binding = setCookie(r, "meshplane_oidc");
    assertNotNull(binding, String.valueOf(r.cookies()));
    assertTrue(binding.toLowerCase(java.util.Locale.ROOT).contains("httponly") && binding.contains("SameSite=Lax"), binding);
    return new Started(location, pair(binding));
  }

  static String query(String url, String name) {
    for (String part : url.substring(url.indexOf('?') + 1).split("&")) {
      if (part.startsWith(name + "=")) return java.net.URLDecoder.decode(part.substring(name.length() + 1), java.nio.charset.StandardCharsets.UTF_8);
    }
    return null;
  }

  /** The path and query of the callback URL Keycloak redirected to. */
  static String callbackPath(String url) {
    assertTrue(url.startsWith(base + CALLBACK + "?"), url);
    return url.substring(base.length());
  }

  static void refusedWith(HttpResponse<Buffer> r, String code) {
    assertEquals(302, r.statusCode(), r.bodyAsString());
    assertEquals("/#/login?error=" + code, r.getHeader("Location"));
    assertEquals(null, setCookie(r, "meshplane_session"), "no session on a refused callback");
  }

  @Test
  void theCallbackWorksOnAnotherReplicaOnceAndOnlyInTheBrowserThatStartedIt() throws Exception {
    KeycloakLogin person = new KeycloakLogin();
    Started s = startOn(a);
    assertEquals("S256", query(s.authorizeUrl(), "code_challenge_method"));
    assertNotNull(query(s.authorizeUrl(), "nonce"));
    assertNotNull(query(s.authorizeUrl(), "code_challenge"));
    String callback = callbackPath(person.login(s.authorizeUrl(), "alice", Keycloak.PASSWORD));

    // a state nobody started
    String forged = callback.replace("state=" + s.state(), "state=" + Sessions.random());
    refusedWith(get(b.panelPort(), forged, s.binding()), "expired_login");

    // the real callback, on the other replica: the pending login is the cluster's
    HttpResponse<Buffer> ok = get(b.panelPort(), callback, s.binding());
    assertEquals(302, ok.statusCode(), ok.bodyAsString());
    assertEquals("/#/", ok.getHeader("Location"));
    String session = setCookie(ok, "meshplane_session");
    assertTrue(session.toLowerCase(java.util.Locale.ROOT).contains("httponly") && session.contains("SameSite=Strict"), session);
    JsonObject me = get(a.panelPort(), "/api/v1/session", pair(session)).bodyAsJsonObject();
    assertEquals("alice", me.getJsonObject("user").getString("username"));
    assertEquals("oidc", me.getJsonObject("user").getString("source"));

    // replayed: the state was used
    refusedWith(get(a.panelPort(), callback, s.binding()), "expired_login");

    // another login (Keycloak remembers alice: straight back), its callback from another browser
    Started second = startOn(a);
    String secondCallback = callbackPath(person.login(second.authorizeUrl(), "alice", Keycloak.PASSWORD));
    refusedWith(get(a.panelPort(), secondCallback, "meshplane_oidc=" + Sessions.random()), "expired_login");
    refusedWith(get(a.panelPort(), secondCallback, null), "expired_login");

    // a real code with another login's state: its PKCE verifier does not match, Keycloak refuses the exchange
    Started one = startOn(a);
    Started other = startOn(b);
    String code = query(person.login(one.authorizeUrl(), "alice", Keycloak.PASSWORD), "code");
    refusedWith(get(b.panelPort(), CALLBACK + "?code=" + code + "&state=" + other.state(), other.binding()), "exchange_failed");

    // the person cancelled at the IdP
    Started cancelled = startOn(a);
    refusedWith(get(a.panelPort(), CALLBACK + "?error=access_denied&state=" + cancelled.state(), cancelled.binding()), "idp_refused");

    List<String> reasons = adminGet("/api/v1/audit?action=session.oidc_login&limit=100").getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(e -> "denied".equals(e.getString("outcome")))
        .map(e -> e.getJsonObject("details").getString("reason")).toList();
    assertTrue(reasons.contains("state unknown, expired or already used"), reasons.toString());
    assertTrue(reasons.contains("the callback does not come from the browser that started the login"), reasons.toString());
    assertTrue(reasons.contains("the code exchange failed"), reasons.toString());
  }

  @Test
  void aReplicaWhoseIdpCannotBeReachedStartsAndSaysSo() {
    Map<String, String> down = new HashMap<>(settings);
    down.put("panel.oidc.issuer", "http://" + Keycloak.HOST + ":" + FreePorts.next() + "/realms/none");
    down.put("panel.oidc.timeout", "1s");
    Meshplane c = cluster.start(2, down);
    JsonObject info = info(c);
    assertEquals(true, info.getBoolean("enabled"));
    assertEquals(false, info.getBoolean("available"));
    refusedWith(get(c.panelPort(), "/api/v1/session/oidc/start", null), "unavailable");
    try (Browser browser = new Browser("http://127.0.0.1:" + c.panelPort(), 1280, 800)) {
      browser.open("/#/login");
      assertTrue(browser.el("login-sso-unavailable").getText().contains("Keycloak cannot be reached right now"));
      assertTrue(browser.all("login-sso-start").isEmpty());
      assertAccessible(browser);
      // the break-glass way in stays
      browser.el("login-username");
    }
  }

  @Test
  void theSessionTheBrowserHeldWhenItStartedTheLoginEndsWithIt() throws Exception {
    // a local session in this browser; the IdP's callback, cross-site, does not carry its Strict cookie: the start does
    PanelSession local = PanelSession.signIn(http, a.panelPort(), "admin");
    assertEquals(200, get(a.panelPort(), "/api/v1/session", local.cookie()).statusCode());
    Started s = startOn(a, local.cookie());
    String callback = callbackPath(new KeycloakLogin().login(s.authorizeUrl(), "alice", Keycloak.PASSWORD));
    HttpResponse<Buffer> ok = get(b.panelPort(), callback, s.binding());
    assertEquals("/#/", ok.getHeader("Location"));
    assertEquals(401, get(a.panelPort(), "/api/v1/session", local.cookie()).statusCode(), "the earlier local session is over");
    assertEquals(200, get(b.panelPort(), "/api/v1/session", pair(setCookie(ok, "meshplane_session"))).statusCode());
  }

  @Test
  void theCallbackTakesTheIdpsIssAndSessionStateChecksIssAndRedirectsAnythingElse() throws Exception {
    KeycloakLogin person = new KeycloakLogin();
    // a parameter no IdP sends: the login page (not a JSON problem), with the binding cookie left as it was
    HttpResponse<Buffer> odd = get(a.panelPort(), CALLBACK + "?code=c&state=" + Sessions.random() + "&utm_source=x", null);
    refusedWith(odd, "failed");
    // RFC 9207: an answer naming another issuer is refused, and audited
    Started mixUp = startOn(a);
    refusedWith(get(a.panelPort(), CALLBACK + "?code=c&state=" + mixUp.state() + "&iss=https%3A%2F%2Fevil.example", mixUp.binding()),
        "invalid_token");
    // the IdP's own iss and session_state are taken
    Started s = startOn(b);
    String callback = callbackPath(person.login(s.authorizeUrl(), "bob", Keycloak.PASSWORD));
    if (query(callback, "iss") == null) callback += "&iss=" + java.net.URLEncoder.encode(kc.issuer(), java.nio.charset.StandardCharsets.UTF_8);
    if (query(callback, "session_state") == null) callback += "&session_state=" + Sessions.random();
    assertEquals("/#/", get(a.panelPort(), callback, s.binding()).getHeader("Location"));
    List<String> reasons = adminGet("/api/v1/audit?action=session.oidc_login&limit=100").getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(e -> "denied".equals(e.getString("outcome")))
        .map(e -> e.getJsonObject("details").getString("reason")).toList();
    assertTrue(reasons.contains("the callback's iss is not the issuer"), reasons.toString());
  }

  @Test
  void startsBeyondTheClustersBoundOnPendingLoginsAreRefused() {
    Map<String, String> small = new HashMap<>(settings);
    small.put("panel.oidc.max_pending", "2"); // one start at once, one more per 10 minutes
    Meshplane d = cluster.start(3, small);
    Await.until("Keycloak discovered by the small replica", 30_000, () -> info(d).getBoolean("available"));
    startOn(d);
    refusedWith(get(d.panelPort(), "/api/v1/session/oidc/start", null), "rate_limited");
    startOn(a); // the other replicas' bound is their own (10,000)
  }
}
