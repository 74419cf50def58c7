package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.hazelcast.core.HazelcastJsonValue;
import com.hazelcast.map.IMap;
import com.hazelcast.query.Predicates;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The panel API for people (API.md §17) on two real replicas sharing one Hazelcast cluster and one
 * PostgreSQL: sessions, CSRF, login lockout, RBAC and the audit trail, each seen from both replicas.
 */
@Timeout(240)
class PanelApiTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static final String LOGINS_SUCCESS = "mesh_panel_logins_total{outcome=\"success\"}";
  static final String LOGINS_FAILURE = "mesh_panel_logins_total{outcome=\"failure\"}";
  static final String LOGINS_RATE_LIMITED = "mesh_panel_logins_total{outcome=\"rate_limited\"}";
  static final String LIMITED_LOGIN = "mesh_panel_rate_limited_total{limit=\"login\"}";
  static final String CSRF_FAILURES = "mesh_panel_csrf_failures_total";
  static final String SESSIONS_ACTIVE = "mesh_panel_sessions_active";
  /** PanelModule counts the sessions every 10 s on each replica; a little more so both have counted. */
  static final long GAUGE_REFRESH_MS = 11_500;

  @BeforeAll
  static void start() {
    // every test signs in from 127.0.0.1: the per-address login limit is raised here and tested in PanelLimitsTest
    cluster = TestCluster.started(2, Map.of("panel.login_per_address", "10000"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    PanelSession.user(a, "root", "admin", "*", "*");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void aLoginSetsASafeCookieAndTheSessionIsKnownOnEveryReplica() {
    HttpResponse<Buffer> r = PanelSession.login(http, a.panelPort(), "ROOT", PanelSession.PASSWORD);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    String cookie = r.getHeader("Set-Cookie");
    assertTrue(cookie.startsWith("__Host-meshplane_session="), cookie);
    for (String flag : List.of("httponly", "secure", "samesite=strict", "path=/")) {
      assertTrue(cookie.toLowerCase(java.util.Locale.ROOT).contains(flag), flag + " in " + cookie);
    }
    assertTrue(!cookie.contains("Domain"), cookie);
    JsonObject body = r.bodyAsJsonObject();
    assertEquals("root", body.getJsonObject("user").getString("username"));
    assertEquals("admin", body.getJsonObject("user").getString("role"));
    assertTrue(body.getJsonArray("permissions").contains("users:manage"));
    assertTrue(body.getString("csrf_token").length() >= 40);
    assertEquals(1800, body.getInteger("idle_timeout_s"));
    assertEquals("no-store", r.getHeader("Cache-Control"));

    PanelSession s = PanelSession.signIn(http, a.panelPort(), "root");
    HttpResponse<Buffer> other = s.get(b.panelPort(), "/api/v1/session");
    assertEquals(200, other.statusCode(), other.bodyAsString());
    assertEquals(s.body().getJsonObject("user"), other.bodyAsJsonObject().getJsonObject("user"));
    assertEquals(s.csrf(), other.bodyAsJsonObject().getString("csrf_token"));

    // a new login gets a new session id, and the session the browser came with is ended
    HttpResponse<Buffer> again = http.send(http.request(HttpMethod.POST, a.panelPort(), "/api/v1/session").putHeader("Cookie", s.cookie())
        .putHeader("Content-Type", "application/json"), new JsonObject().put("username", "root").put("password", PanelSession.PASSWORD)
        .encode().getBytes());
    assertEquals(200, again.statusCode());
    String fresh = again.getHeader("Set-Cookie");
    assertNotEquals(s.cookie(), fresh.substring(0, fresh.indexOf(';')));
    assertEquals(401, s.get(b.panelPort(), "/api/v1/session").statusCode());
  }

  @Test
  void aWrongPasswordAndAnUnknownUserGetTheSameAnswerAndAreAudited() {
    PanelSession.user(a, "mallory-target", "viewer", "team-a", "prod");
    HttpResponse<Buffer> wrong = PanelSession.login(http, a.panelPort(), "mallory-target", "not the password at all");
    HttpResponse<Buffer> unknown = PanelSession.login(http, a.panelPort(), "nobody-here", "not the password at all");
    for (HttpResponse<Buffer> r : List.of(wrong, unknown)) {
      assertEquals(401, r.statusCode(), r.bodyAsString());
      assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"));
      assertEquals("wrong username or password", r.bodyAsJsonObject().getString("detail"));
      assertEquals(null, r.getHeader("Set-Cookie"));
    }
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "root");
    JsonArray events = admin.get(b.panelPort(), "/api/v1/audit?action=session.login").bodyAsJsonObject().getJsonArray("items");
    assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(e -> "failed".equals(e.getString("outcome"))
        && "mallory-target".equals(e.getJsonObject("actor").getString("name"))
        && e.getJsonObject("actor").getString("id").startsWith("usr_")), events.encodePrettily());
    assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(e -> "failed".equals(e.getString("outcome"))
        && "nobody-here".equals(e.getJsonObject("actor").getString("name"))), events.encodePrettily());
    assertTrue(events.stream().map(JsonObject.class::cast).anyMatch(e -> "success".equals(e.getString("outcome"))
        && "user".equals(e.getJsonObject("actor").getString("type"))), events.encodePrettily());
  }

  @Test
  void fiveFailuresLockTheUsernameFromThatAddressOnEveryReplica() {
    PanelSession.user(a, "lockme", "viewer", "team-a", "prod");
    double failuresBefore = total(LOGINS_FAILURE);
    double limitedBefore = total(LOGINS_RATE_LIMITED);
    double successBefore = total(LOGINS_SUCCESS);
    double rejectedBefore = total(LIMITED_LOGIN);
    for (int i = 0; i < 5; i++) {
      assertEquals(401, PanelSession.login(http, (i % 2 == 0 ? a : b).panelPort(), "lockme", "wrong password " + i).statusCode());
    }
    // the sixth try, on the other replica and with the right password, is refused until the window refills
    HttpResponse<Buffer> locked = PanelSession.login(http, b.panelPort(), "lockme", PanelSession.PASSWORD);
    assertEquals(429, locked.statusCode(), locked.bodyAsString());
    assertEquals("rate_limited", locked.bodyAsJsonObject().getString("code"));
    int retryAfter = Integer.parseInt(locked.getHeader("Retry-After"));
    // locked until the 15-minute window that began at the first failure ends (not 3 minutes: no even refill)
    assertTrue(retryAfter > 14 * 60 && retryAfter <= 15 * 60, "Retry-After " + retryAfter);
    assertEquals(429, PanelSession.login(http, a.panelPort(), "lockme", PanelSession.PASSWORD).statusCode());
    // another username from the same address is not locked
    assertEquals(200, PanelSession.login(http, a.panelPort(), "root", PanelSession.PASSWORD).statusCode());
    // each answer counted once, by outcome, on the replica that gave it (the sum over both replicas)
    assertEquals(5.0, total(LOGINS_FAILURE) - failuresBefore, "the 5 wrong passwords");
    assertEquals(2.0, total(LOGINS_RATE_LIMITED) - limitedBefore, "the 2 logins refused while locked");
    assertEquals(1.0, total(LOGINS_SUCCESS) - successBefore, "root's login");
    assertEquals(2.0, total(LIMITED_LOGIN) - rejectedBefore, "the 2 rate-limit rejections of the login");
  }

  @Test
  void failuresSentAllAtOnceCannotGetPastTheLimit() {
    PanelSession.user(a, "burst", "viewer", "team-a", "prod");
    List<io.vertx.core.Future<HttpResponse<Buffer>>> all = new java.util.ArrayList<>();
    for (int i = 0; i < 16; i++) {
      all.add(http.sendAsync(HttpMethod.POST, (i % 2 == 0 ? a : b).panelPort(), "/api/v1/session", null,
          new JsonObject().put("username", "burst").put("password", "wrong password " + i)));
    }
    long checked = all.stream().map(f -> Http.await(f, 60)).filter(r -> r.statusCode() == 401).count();
    assertEquals(5, checked, "a failure is counted before the password is checked: 5 checked, the rest 429");
  }

  @Test
  void aLoginRacingADisableNeverLeavesASession() {
    JsonObject racer = PanelSession.user(a, "racer", "viewer", "team-a", "prod");
    String racerId = racer.getString("id");
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "root");
    // a login that completed before the disable: its session must end with it (the outcome is certain)
    PanelSession early = PanelSession.signIn(http, b.panelPort(), "racer");
    // logins in flight (each spends tens of ms hashing) while the user is disabled on the other replica:
    // each may land before or after the change, but none may leave a session behind
    List<io.vertx.core.Future<HttpResponse<Buffer>>> logins = new java.util.ArrayList<>();
    for (int i = 0; i < 4; i++) {
      logins.add(http.sendAsync(HttpMethod.POST, a.panelPort(), "/api/v1/session", null,
          new JsonObject().put("username", "racer").put("password", PanelSession.PASSWORD)));
    }
    assertEquals(200, admin.send(HttpMethod.PATCH, b.panelPort(), "/api/v1/users/" + racerId,
        new JsonObject().put("disabled", true)).statusCode());
    int won = 0;
    int refused = 0;
    for (io.vertx.core.Future<HttpResponse<Buffer>> f : logins) {
      HttpResponse<Buffer> r = Http.await(f, 60);
      if (r.statusCode() == 200) {
        // the login won the race: the session it was given is already gone, on both replicas
        won++;
        String cookie = r.getHeader("Set-Cookie");
        for (Meshplane m : List.of(a, b)) {
          HttpResponse<Buffer> after = http.send(http.request(HttpMethod.GET, m.panelPort(), "/api/v1/session")
              .putHeader("Cookie", cookie.substring(0, cookie.indexOf(';'))));
          assertEquals(401, after.statusCode(), "a session of a disabled user must not outlive the change");
        }
      } else {
        // the login lost the race: the same answer as any refused login, and no cookie
        refused++;
        assertEquals(401, r.statusCode(), r.bodyAsString());
        assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"));
        assertEquals(null, r.getHeader("Set-Cookie"));
      }
    }
    assertEquals(4, won + refused);
    System.out.println("racing logins: " + won + " answered 200 (their sessions already ended), " + refused + " answered 401");
    // whichever way each race went: the earlier session is ended, a new login is refused, and the
    // cluster's session store holds no session of the user at all
    for (Meshplane m : List.of(a, b)) assertEquals(401, early.get(m.panelPort(), "/api/v1/session").statusCode());
    assertEquals(401, PanelSession.login(http, a.panelPort(), "racer", PanelSession.PASSWORD).statusCode());
    IMap<String, HazelcastJsonValue> store = b.hazelcast().getMap(Sessions.MAP);
    assertEquals(0, store.values(Predicates.equal("user_id", racerId)).size(),
        "sessions of the disabled user left in the store (" + won + " racing logins answered 200, " + refused + " 401)");
  }

  @Test
  void theActiveSessionsGaugeCountsEachSessionOnceOverTheReplicas() {
    // the gauge is per replica (the sessions whose primary copy it holds), refreshed every 10 s: the
    // sum over both replicas is the number of sessions in the cluster's store (backups not counted)
    IMap<String, HazelcastJsonValue> store = a.hazelcast().getMap(Sessions.MAP);
    // every replica has counted since the previous test's last change (a refresh completed after this point)
    long refreshedA = a.panel().sessionGaugeRefreshes();
    long refreshedB = b.panel().sessionGaugeRefreshes();
    Await.until("a sessions gauge refresh on each replica", 2 * GAUGE_REFRESH_MS,
        () -> a.panel().sessionGaugeRefreshes() > refreshedA && b.panel().sessionGaugeRefreshes() > refreshedB);
    int stored = store.size();
    awaitTotal(SESSIONS_ACTIVE, stored, "before: every session once");
    PanelSession s = PanelSession.signIn(http, a.panelPort(), "root");
    assertEquals(stored + 1, store.size());
    awaitTotal(SESSIONS_ACTIVE, stored + 1, "one more session after a login");
    HttpResponse<Buffer> out = s.send(HttpMethod.DELETE, b.panelPort(), "/api/v1/session", null);
    assertEquals(204, out.statusCode(), out.bodyAsString());
    assertEquals(stored, store.size());
    awaitTotal(SESSIONS_ACTIVE, stored, "one session fewer after the logout");
  }

  @Test
  void aUsernameIsOnlyFoldedInAscii() {
    PanelSession root = PanelSession.signIn(http, a.panelPort(), "root");
    HttpResponse<Buffer> kelvin = root.send(HttpMethod.POST, a.panelPort(), "/api/v1/users", new JsonObject()
        .put("username", "\u212Aate").put("password", PanelSession.PASSWORD).put("role", "viewer").put("team", "t").put("environment", "e"));
    assertEquals(400, kelvin.statusCode(), kelvin.bodyAsString());
    assertEquals(400, PanelSession.login(http, a.panelPort(), "\u212Aate", PanelSession.PASSWORD).statusCode());
  }

  @Test
  void loggingOutEndsTheSessionOnEveryReplica() {
    PanelSession s = PanelSession.signIn(http, a.panelPort(), "root");
    assertEquals(200, s.get(b.panelPort(), "/api/v1/nodes").statusCode());
    HttpResponse<Buffer> out = s.send(HttpMethod.DELETE, b.panelPort(), "/api/v1/session", null);
    assertEquals(204, out.statusCode(), out.bodyAsString());
    assertTrue(out.getHeader("Set-Cookie").contains("Max-Age=0"), out.getHeader("Set-Cookie"));
    for (Meshplane m : List.of(a, b)) {
      HttpResponse<Buffer> r = s.get(m.panelPort(), "/api/v1/nodes");
      assertEquals(401, r.statusCode());
      assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"));
    }
  }

  @Test
  void disablingAUserEndsTheirSessionsEverywhereAndTheirLogins() {
    JsonObject bob = PanelSession.user(a, "bob", "operator", "team-a", "prod");
    PanelSession bobOnA = PanelSession.signIn(http, a.panelPort(), "bob");
    PanelSession bobOnB = PanelSession.signIn(http, b.panelPort(), "bob");
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "root");
    HttpResponse<Buffer> r = admin.send(HttpMethod.PATCH, b.panelPort(), "/api/v1/users/" + bob.getString("id"),
        new JsonObject().put("disabled", true));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(true, r.bodyAsJsonObject().getBoolean("disabled"));
    for (PanelSession s : List.of(bobOnA, bobOnB)) {
      for (Meshplane m : List.of(a, b)) assertEquals(401, s.get(m.panelPort(), "/api/v1/nodes").statusCode());
    }
    assertEquals(401, PanelSession.login(http, a.panelPort(), "bob", PanelSession.PASSWORD).statusCode());
    // enabled again: the same password works
    assertEquals(200, admin.send(HttpMethod.PATCH, a.panelPort(), "/api/v1/users/" + bob.getString("id"),
        new JsonObject().put("disabled", false)).statusCode());
    assertEquals(200, PanelSession.login(http, b.panelPort(), "bob", PanelSession.PASSWORD).statusCode());
  }

  @Test
  void aMutatingRequestWithoutTheCsrfTokenIsRefusedAuditedAndChangesNothing() {
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "root");
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "csrf-1", "team-a", "prod");
    JsonObject retag = new JsonObject().put("tags", new JsonArray().add("tag:evil"));
    double csrfBefore = total(CSRF_FAILURES);
    // a token one character off (never the same character: a token that began with "x" once made this case the real token)
    String oneOff = (admin.csrf().charAt(0) == 'x' ? "y" : "x") + admin.csrf().substring(1);
    for (String header : new String[] {null, "", oneOff}) {
      HttpResponse<Buffer> r = admin.send(HttpMethod.PUT, b.panelPort(), "/api/v1/nodes/" + n.id() + "/tags", retag, header);
      assertEquals(403, r.statusCode(), r.bodyAsString());
      assertEquals("csrf_failed", r.bodyAsJsonObject().getString("code"));
    }
    JsonObject node = admin.get(a.panelPort(), "/api/v1/nodes/" + n.id()).bodyAsJsonObject();
    assertEquals(new JsonArray().add("tag:test"), node.getJsonArray("tags"), "nothing changed");
    JsonArray denied = admin.get(a.panelPort(), "/api/v1/audit?action=node.retag").bodyAsJsonObject().getJsonArray("items");
    assertTrue(denied.stream().map(JsonObject.class::cast).anyMatch(e -> "denied".equals(e.getString("outcome"))
        && "user".equals(e.getJsonObject("actor").getString("type")) && n.id().equals(e.getJsonObject("target").getString("id"))),
        denied.encodePrettily());
    assertEquals(3.0, total(CSRF_FAILURES) - csrfBefore, "each refused request counted once");
    // with the token it goes through, and the audit trail names the person
    HttpResponse<Buffer> ok = admin.send(HttpMethod.PUT, b.panelPort(), "/api/v1/nodes/" + n.id() + "/tags", retag);
    assertEquals(200, ok.statusCode(), ok.bodyAsString());
    JsonObject done = admin.get(a.panelPort(), "/api/v1/audit?action=node.retag").bodyAsJsonObject().getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(e -> "success".equals(e.getString("outcome"))).findFirst().orElseThrow();
    assertEquals(new JsonObject().put("type", "user").put("id", admin.body().getJsonObject("user").getString("id")).put("name", "root"),
        done.getJsonObject("actor"));
  }

  @Test
  void bearerTokensAreNotAcceptedOnThePanel() {
    for (String path : List.of("/api/v1/nodes", "/api/v1/session", "/api/v1/users")) {
      HttpResponse<Buffer> r = http.get(a.panelPort(), path, cluster.admin());
      assertEquals(401, r.statusCode(), path);
      assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"));
    }
    // nor is a session cookie on the coordinator API
    PanelSession admin = PanelSession.signIn(http, a.panelPort(), "root");
    assertEquals(401, admin.get(a.coordinatorPort(), "/v1/nodes").statusCode());
  }

  @Test
  void rolesAndBoundariesHoldAsForTokens() {
    PanelSession.user(a, "vera", "viewer", "team-a", "prod");
    PanelSession.user(a, "otto", "operator", "team-a", "prod");
    PanelSession.user(a, "ada", "admin", "team-a", "prod");
    PanelSession viewer = PanelSession.signIn(http, a.panelPort(), "vera");
    PanelSession operator = PanelSession.signIn(http, b.panelPort(), "otto");
    PanelSession teamAdmin = PanelSession.signIn(http, a.panelPort(), "ada");
    Nodes.Enrolled mine = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "rbac-a", "team-a", "prod");
    Nodes.Enrolled theirs = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "rbac-b", "team-b", "prod");
    JsonObject token = new JsonObject().put("name", "ci").put("expires", java.time.Instant.now().plus(java.time.Duration.ofDays(30)).toString());

    // a viewer reads, and cannot change anything
    assertEquals(200, viewer.get(a.panelPort(), "/api/v1/nodes/" + mine.id()).statusCode());
    assertForbidden(viewer.send(HttpMethod.PUT, a.panelPort(), "/api/v1/nodes/" + mine.id() + "/tags",
        new JsonObject().put("tags", new JsonArray().add("tag:x"))));
    assertForbidden(viewer.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens", token.copy().put("scope", scope("monitoring"))));
    assertForbidden(viewer.get(a.panelPort(), "/api/v1/auth/tokens"));
    // an operator manages scripts' tokens but not admin tokens, and never users
    HttpResponse<Buffer> created = operator.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens",
        token.copy().put("scope", scope("pipeline")));
    assertEquals(201, created.statusCode(), created.bodyAsString());
    assertEquals("/api/v1/auth/tokens/" + created.bodyAsJsonObject().getString("id"), created.getHeader("Location"));
    assertNotNull(created.bodyAsJsonObject().getString("token"), "the secret, shown once");
    assertForbidden(operator.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens", token.copy().put("scope", scope("admin"))));
    assertForbidden(operator.get(b.panelPort(), "/api/v1/users"));
    // admin tokens are not the operator's to read either: not listed, not found
    HttpResponse<Buffer> adminToken = teamAdmin.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens",
        token.copy().put("name", "owner").put("scope", scope("admin")));
    assertEquals(201, adminToken.statusCode(), adminToken.bodyAsString());
    String adminTokenId = adminToken.bodyAsJsonObject().getString("id");
    assertEquals(404, operator.get(a.panelPort(), "/api/v1/auth/tokens/" + adminTokenId).statusCode());
    assertTrue(operator.get(a.panelPort(), "/api/v1/auth/tokens").bodyAsJsonObject().getJsonArray("items").stream()
        .map(JsonObject.class::cast).noneMatch(t -> t.getString("id").equals(adminTokenId)), "admin tokens are not listed to operators");
    assertEquals(404, operator.send(HttpMethod.DELETE, a.panelPort(), "/api/v1/auth/tokens/" + adminTokenId, null).statusCode());
    assertEquals(404, operator.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens/" + adminTokenId + "/rotate",
        new JsonObject().put("expires", java.time.Instant.now().plus(java.time.Duration.ofDays(1)).toString())).statusCode());
    assertEquals(200, teamAdmin.get(a.panelPort(), "/api/v1/auth/tokens/" + adminTokenId).statusCode());
    assertEquals(204, operator.send(HttpMethod.DELETE, b.panelPort(), "/api/v1/auth/tokens/" + created.bodyAsJsonObject().getString("id"),
        null).statusCode());
    // team boundaries: another team's node does not exist, a token for another team is refused
    assertEquals(404, operator.get(a.panelPort(), "/api/v1/nodes/" + theirs.id()).statusCode());
    assertForbidden(operator.send(HttpMethod.POST, a.panelPort(), "/api/v1/auth/tokens", token.copy()
        .put("scope", new JsonObject().put("team", "team-b").put("environment", "prod").put("surface", "pipeline"))));
    JsonArray listed = operator.get(a.panelPort(), "/api/v1/nodes").bodyAsJsonObject().getJsonArray("items");
    assertTrue(listed.stream().map(JsonObject.class::cast).allMatch(x -> "team-a".equals(x.getString("team"))), listed.encode());
    // an admin of one team creates users inside it only, and no one wider than themselves
    JsonObject user = new JsonObject().put("password", PanelSession.PASSWORD).put("role", "operator");
    HttpResponse<Buffer> inside = teamAdmin.send(HttpMethod.POST, b.panelPort(), "/api/v1/users",
        user.copy().put("username", "olga").put("team", "team-a").put("environment", "prod"));
    assertEquals(201, inside.statusCode(), inside.bodyAsString());
    assertForbidden(teamAdmin.send(HttpMethod.POST, b.panelPort(), "/api/v1/users",
        user.copy().put("username", "wider").put("team", "*").put("environment", "prod")));
    assertForbidden(teamAdmin.send(HttpMethod.POST, b.panelPort(), "/api/v1/users",
        user.copy().put("username", "elsewhere").put("team", "team-b").put("environment", "prod")));
    JsonArray users = teamAdmin.get(a.panelPort(), "/api/v1/users").bodyAsJsonObject().getJsonArray("items");
    assertTrue(users.stream().map(JsonObject.class::cast).allMatch(x -> "team-a".equals(x.getString("team"))), users.encode());
    assertTrue(users.stream().map(JsonObject.class::cast).noneMatch(x -> x.containsKey("password_hash") || x.containsKey("password")));
    // nobody demotes or disables themselves (the last admin would lock everyone out)
    String adaId = teamAdmin.body().getJsonObject("user").getString("id");
    assertEquals(409, teamAdmin.send(HttpMethod.PATCH, a.panelPort(), "/api/v1/users/" + adaId, new JsonObject().put("disabled", true))
        .statusCode());
    // the denials are on the record under the person's name
    PanelSession root = PanelSession.signIn(http, a.panelPort(), "root");
    JsonArray audit = root.get(a.panelPort(), "/api/v1/audit?action=user.create").bodyAsJsonObject().getJsonArray("items");
    assertTrue(audit.stream().map(JsonObject.class::cast).anyMatch(e -> "denied".equals(e.getString("outcome"))
        && "ada".equals(e.getJsonObject("actor").getString("name"))), audit.encodePrettily());
  }

  @Test
  void usersAreValidatedAndUsernamesAreUnique() {
    PanelSession root = PanelSession.signIn(http, a.panelPort(), "root");
    JsonObject ok = new JsonObject().put("username", "Carol.Smith@example.org").put("password", PanelSession.PASSWORD).put("role", "viewer")
        .put("team", "team-c").put("environment", "prod");
    HttpResponse<Buffer> created = root.send(HttpMethod.POST, a.panelPort(), "/api/v1/users", ok);
    assertEquals(201, created.statusCode(), created.bodyAsString());
    assertEquals("carol.smith@example.org", created.bodyAsJsonObject().getString("username"));
    assertEquals(409, root.send(HttpMethod.POST, b.panelPort(), "/api/v1/users", ok).statusCode());
    Map<String, JsonObject> bad = Map.of(
        "password", ok.copy().put("username", "short-pw").put("password", "too short"),
        "role", ok.copy().put("username", "bad-role").put("role", "root"),
        "username", ok.copy().put("username", "has space"),
        "team", ok.copy().put("username", "bad-team").put("team", "Team A"));
    bad.forEach((field, body) -> {
      HttpResponse<Buffer> r = root.send(HttpMethod.POST, a.panelPort(), "/api/v1/users", body);
      assertEquals(400, r.statusCode(), field);
      assertEquals(field, r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    });
    // the stored password is an argon2id hash with the documented parameters, never the password
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT password_hash FROM users WHERE username = 'carol.smith@example.org'")) {
      rs.next();
      assertTrue(rs.getString(1).startsWith("$argon2id$v=19$m=19456,t=2,p=1$"), rs.getString(1));
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
    // a password reset ends the person's sessions and the new password works
    PanelSession carol = PanelSession.signIn(http, b.panelPort(), "carol.smith@example.org");
    HttpResponse<Buffer> reset = root.send(HttpMethod.PATCH, a.panelPort(), "/api/v1/users/" + created.bodyAsJsonObject().getString("id"),
        new JsonObject().put("password", "another long passphrase"));
    assertEquals(200, reset.statusCode(), reset.bodyAsString());
    assertEquals(401, carol.get(a.panelPort(), "/api/v1/nodes").statusCode());
    assertEquals(200, PanelSession.login(http, b.panelPort(), "carol.smith@example.org", "another long passphrase").statusCode());
  }

  @Test
  void theOverviewCountsTheCallersOwnNodes() {
    PanelSession.user(a, "ovi", "viewer", "team-o", "prod");
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "ov-1", "team-o", "prod");
    Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "ov-2", "team-o", "prod");
    assertEquals(200, http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(1))
        .statusCode());
    PanelSession viewer = PanelSession.signIn(http, b.panelPort(), "ovi");
    JsonObject o = Await.until("the overview counts the online node", 10_000, () -> {
      HttpResponse<Buffer> r = viewer.get(b.panelPort(), "/api/v1/overview");
      assertEquals(200, r.statusCode(), r.bodyAsString());
      return r.bodyAsJsonObject();
    }, overview -> overview.getJsonObject("nodes").getLong("online") >= 1);
    assertEquals(new JsonObject().put("total", 2L).put("online", 1L).put("stale", 0L).put("pending", 1L), o.getJsonObject("nodes"));
    assertEquals(0L, o.getLong("operations_in_flight"));
    assertEquals(0, o.getInteger("policy_drift"));
    assertEquals("estimated", o.getString("heartbeats_per_second_source"));
  }

  /** The value of one series (name and labels as Prometheus shows them) on one replica's /metrics. */
  private static double metric(Meshplane m, String series) {
    HttpResponse<Buffer> r = http.get(m.panelPort(), "/metrics");
    assertEquals(200, r.statusCode());
    for (String line : r.bodyAsString().split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
    }
    throw new AssertionError("no series " + series + " in the /metrics of " + m.panelPort() + ":\n" + r.bodyAsString());
  }

  /** The series summed over both replicas (each counts what it answered itself). */
  private static double total(String series) {
    return metric(a, series) + metric(b, series);
  }

  private static void awaitTotal(String series, double expected, String what) {
    Await.until(what + ": " + series + " summed over the replicas is " + expected, 2 * GAUGE_REFRESH_MS, () -> total(series),
        seen -> seen == expected);
  }

  private static JsonObject scope(String surface) {
    return new JsonObject().put("team", "team-a").put("environment", "prod").put("surface", surface);
  }

  private static void assertForbidden(HttpResponse<Buffer> r) {
    assertEquals(403, r.statusCode(), r.bodyAsString());
    assertEquals("forbidden", r.bodyAsJsonObject().getString("code"));
  }
}
