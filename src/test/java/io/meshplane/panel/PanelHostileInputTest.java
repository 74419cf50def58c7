package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.RawHttp;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The panel attacked from outside: hostile login bodies, forged and oversized cookies, forged CSRF
 * tokens, odd encodings. Each gets a clear 4xx problem, nothing changes, nothing is logged at ERROR or
 * with a stack trace, and the panel keeps serving its real users.
 */
@Timeout(180)
class PanelHostileInputTest {
  static LogCapture logs;
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1, Map.of("panel.login_per_address", "10000"));
    app = cluster.replica(0);
    http = cluster.http();
    port = app.panelPort();
    PanelSession.user(app, "root", "admin", "*", "*");
  }

  @AfterAll
  static void stop() {
    try {
      if (cluster != null) cluster.close();
    } finally {
      if (logs != null) logs.close();
    }
  }

  @Test
  void hostileLoginBodiesAreRefusedNamingTheField() {
    Map<String, String> bodies = new LinkedHashMap<>();
    bodies.put("username", "{\"username\":5,\"password\":\"x\"}");
    bodies.put("password", "{\"username\":\"root\",\"password\":[\"x\"]}");
    bodies.put("username ", "{\"username\":\"root\\u0000\",\"password\":\"correct horse battery staple\"}");
    bodies.put("username  ", "{\"username\":\"" + "a".repeat(65) + "\",\"password\":\"x\"}");
    bodies.put("username   ", "{\"username\":\"r\u00f6\u00f6t\",\"password\":\"x\"}");
    bodies.put("password ", "{\"username\":\"root\",\"password\":\"" + "p".repeat(257) + "\"}");
    bodies.put("(body)", "[1,2,3]");
    bodies.put("(body) ", "{\"username\":\"root\",\"password\":\"x\"");
    bodies.put("(body)  ", "[".repeat(2000) + "]".repeat(2000));
    bodies.forEach((field, body) -> {
      HttpResponse<Buffer> r = http.sendRaw(HttpMethod.POST, port, "/api/v1/session", "application/json",
          Buffer.buffer(body.getBytes(StandardCharsets.UTF_8)));
      assertEquals(400, r.statusCode(), body.length() > 80 ? body.substring(0, 80) : body);
      assertEquals("invalid_request", r.bodyAsJsonObject().getString("code"));
      assertEquals(null, r.getHeader("Set-Cookie"));
      if (!field.startsWith("(body)")) {
        assertEquals(field.trim(), r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), body);
      }
    });
    for (String type : List.of("text/plain", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded")) {
      HttpResponse<Buffer> r = http.sendRaw(HttpMethod.POST, port, "/api/v1/session", type,
          Buffer.buffer("username=root&password=correct+horse+battery+staple"));
      assertEquals(415, r.statusCode(), type);
    }
    HttpResponse<Buffer> huge = http.sendRaw(HttpMethod.POST, port, "/api/v1/session", "application/json",
        Buffer.buffer("{\"username\":\"root\",\"password\":\"" + "p".repeat(70_000) + "\"}"));
    assertEquals(413, huge.statusCode());
    assertStillServing();
  }

  @Test
  void forgedCookiesAndCsrfTokensGetNowhere() throws Exception {
    for (String cookie : List.of("meshplane_session=%zz", "__Host-meshplane_session=" + "A".repeat(43),
        "__Host-meshplane_session=../../etc/passwd", "__Host-meshplane_session=\"quoted\"", "__Host-meshplane_session=",
        "__Host-meshplane_session=" + "é".repeat(43))) {
      HttpResponse<Buffer> r = http.send(http.request(HttpMethod.GET, port, "/api/v1/nodes").putHeader("Cookie", cookie));
      assertEquals(401, r.statusCode(), cookie);
      assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"));
    }
    // a cookie header beyond the header limit: 431 as a problem, no stack trace
    RawHttp.Answer big = RawHttp.exchange(port, RawHttp.ascii("GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\nCookie: __Host-meshplane_session="
        + "A".repeat(20_000) + "\r\n\r\n"));
    assertEquals(431, big.status());

    PanelSession root = PanelSession.signIn(http, port, "root");
    JsonObject user = new JsonObject().put("username", "forged").put("password", PanelSession.PASSWORD).put("role", "viewer")
        .put("team", "t").put("environment", "e");
    for (String csrf : List.of(root.csrf().toUpperCase(), root.csrf() + "x", "x".repeat(5000), "\u00e9\u00e9", root.csrf().substring(0, 20))) {
      HttpResponse<Buffer> r = root.send(HttpMethod.POST, port, "/api/v1/users", user, csrf);
      assertEquals(403, r.statusCode(), csrf.length() > 40 ? csrf.substring(0, 40) : csrf);
      assertEquals("csrf_failed", r.bodyAsJsonObject().getString("code"));
    }
    // another session's CSRF token is not this session's
    PanelSession other = PanelSession.signIn(http, port, "root");
    assertEquals(403, root.send(HttpMethod.POST, port, "/api/v1/users", user, other.csrf()).statusCode());
    assertTrue(root.get(port, "/api/v1/users").bodyAsJsonObject().getJsonArray("items").stream()
        .map(JsonObject.class::cast).noneMatch(u -> "forged".equals(u.getString("username"))), "nothing was created");
    // forged ids and cursors
    assertEquals(404, root.get(port, "/api/v1/users/usr_../../x").statusCode());
    assertEquals(404, root.get(port, "/api/v1/users/tok_01m8000000000000000000000z").statusCode());
    assertEquals(400, root.get(port, "/api/v1/users?cursor=forged").statusCode());
    assertEquals(400, root.get(port, "/api/v1/users?limit=1001").statusCode());
    assertEquals(400, root.send(HttpMethod.PATCH, port, "/api/v1/users/" + root.body().getJsonObject("user").getString("id"),
        new JsonObject().put("disabled", "yes")).statusCode());
    assertEquals(400, root.send(HttpMethod.PATCH, port, "/api/v1/users/" + root.body().getJsonObject("user").getString("id"),
        new JsonObject()).statusCode());
    assertStillServing();
  }

  /**
   * A header or cookie given twice is ambiguous, so refused, never resolved by picking one: two
   * X-CSRF-Token headers (the right one first or second) are a 403 csrf_failed, audited like any; two
   * session cookies (in one Cookie header or in two) are a 401, even when both are this session's.
   */
  @Test
  void aRepeatedCsrfHeaderOrSessionCookieIsRefused() throws Exception {
    PanelSession root = PanelSession.signIn(http, port, "root");
    PanelSession other = PanelSession.signIn(http, port, "root");
    String name = root.cookie().substring(0, root.cookie().indexOf('='));
    String body = new JsonObject().put("username", "twice").put("password", PanelSession.PASSWORD).put("role", "viewer")
        .put("team", "t").put("environment", "e").encode();
    int deniedBefore = denials(root);
    for (String csrf : List.of(root.csrf() + "\r\nX-CSRF-Token: x", "x\r\nX-CSRF-Token: " + root.csrf(),
        root.csrf() + "\r\nX-CSRF-Token: " + root.csrf(), root.csrf() + "\r\nx-csrf-token: " + other.csrf())) {
      RawHttp.Answer a = post(root.cookie(), "X-CSRF-Token: " + csrf + "\r\n", body);
      assertEquals(403, a.status(), csrf + ": " + a.body());
      assertEquals("csrf_failed", new JsonObject(a.body()).getString("code"), a.body());
    }
    assertEquals(deniedBefore + 4, denials(root), "each refusal is on the record, as user.create denied");

    String csrf = "X-CSRF-Token: " + root.csrf() + "\r\n";
    List<String> cookies = List.of(
        "Cookie: " + root.cookie() + "; " + other.cookie() + "\r\n",
        "Cookie: " + other.cookie() + "; " + root.cookie() + "\r\n",
        "Cookie: " + root.cookie() + "; " + root.cookie() + "\r\n",
        "Cookie: " + root.cookie() + "; " + name + "=forged\r\n",
        "Cookie: " + root.cookie() + "\r\nCookie: " + other.cookie() + "\r\n",
        "Cookie: theme=dark; " + root.cookie() + "\r\nCookie: lang=en; " + name + "=forged\r\n");
    for (String cookie : cookies) {
      RawHttp.Answer read = RawHttp.exchange(port, RawHttp.ascii("GET /api/v1/session HTTP/1.1\r\nHost: x\r\n" + cookie + "\r\n"));
      assertEquals(401, read.status(), cookie + read.body());
      assertEquals("unauthenticated", new JsonObject(read.body()).getString("code"), read.body());
      assertTrue(new JsonObject(read.body()).getString("detail").contains("more than once"), read.body());
      RawHttp.Answer write = post(null, cookie + csrf, body);
      assertEquals(401, write.status(), cookie + write.body());
    }
    // one session cookie among other cookies is fine
    RawHttp.Answer fine = RawHttp.exchange(port, RawHttp.ascii("GET /api/v1/session HTTP/1.1\r\nHost: x\r\nCookie: theme=dark; "
        + root.cookie() + "; lang=en\r\n\r\n"));
    assertEquals(200, fine.status(), fine.body());
    assertTrue(root.get(port, "/api/v1/users").bodyAsJsonObject().getJsonArray("items").stream()
        .map(JsonObject.class::cast).noneMatch(u -> "twice".equals(u.getString("username"))), "nothing was created");
    assertStillServing();
  }

  /** A POST of {@code body} to /api/v1/users with these raw header lines (and the cookie, when given). */
  private static RawHttp.Answer post(String cookie, String headers, String body) throws java.io.IOException {
    byte[] json = body.getBytes(StandardCharsets.UTF_8);
    return RawHttp.exchange(port, RawHttp.ascii("POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + "Content-Length: " + json.length + "\r\n" + (cookie == null ? "" : "Cookie: " + cookie + "\r\n") + headers + "\r\n" + body));
  }

  /** How many user.create denials the trail holds. */
  private static int denials(PanelSession s) {
    return (int) s.get(port, "/api/v1/audit?action=user.create&limit=1000").bodyAsJsonObject().getJsonArray("items").stream()
        .map(JsonObject.class::cast).filter(e -> "denied".equals(e.getString("outcome"))).count();
  }

  /**
   * Usernames are the login name, unique across teams; a team admin probing for another team's users
   * learns nothing: a taken name gets one neutral 409, word for word the same whether the user is in
   * the caller's team, in another, or differs only in case.
   */
  @Test
  void aTakenUsernameIsOneNeutralAnswerWhereverItsUserIs() {
    PanelSession.user(app, "ada", "admin", "team-a", "prod");
    PanelSession.user(app, "bob", "admin", "team-b", "prod");
    PanelSession ada = PanelSession.signIn(http, port, "ada");
    PanelSession bob = PanelSession.signIn(http, port, "bob");
    JsonObject zoe = new JsonObject().put("username", "zoe").put("password", PanelSession.PASSWORD).put("role", "viewer")
        .put("environment", "prod");
    HttpResponse<Buffer> created = ada.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("team", "team-a"));
    assertEquals(201, created.statusCode(), created.bodyAsString());

    List<HttpResponse<Buffer>> refusals = List.of(
        bob.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("team", "team-b")),
        bob.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("username", "ZOE").put("team", "team-b")),
        ada.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("team", "team-a")),
        ada.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("username", "ada").put("team", "team-a")));
    JsonObject first = null;
    for (HttpResponse<Buffer> r : refusals) {
      assertEquals(409, r.statusCode(), r.bodyAsString());
      JsonObject body = r.bodyAsJsonObject().copy();
      body.remove("request_id");
      assertEquals("this username is not available; choose another", body.getString("detail"));
      if (first == null) first = body;
      assertEquals(first, body, "the same answer wherever the user is");
    }
    assertTrue(bob.get(port, "/api/v1/users").bodyAsJsonObject().getJsonArray("items").stream().map(JsonObject.class::cast)
        .noneMatch(u -> "zoe".equals(u.getString("username"))), "bob sees no user of team-a");
    assertEquals(201, bob.send(HttpMethod.POST, port, "/api/v1/users", zoe.copy().put("username", "zed").put("team", "team-b"))
        .statusCode(), "a free name is taken as usual");
    assertStillServing();
  }

  private static void assertStillServing() {
    assertEquals(200, PanelSession.signIn(http, port, "root").get(port, "/api/v1/nodes").statusCode());
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace in the log");
  }
}
