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
