package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.ValidationReport;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The web panel API's own routes (session, users, overview) against the OpenAPI document, with a real
 * session cookie and CSRF header as a browser sends them: every request and answer (successes and
 * refusals) validated with the same validator as {@link OpenApiContractTest}, each with the status it
 * must have. A few of the {@code /v1} routes the panel serves under {@code /api/v1} are checked too:
 * their answers must match the {@code /v1} operation the document describes them by.
 */
@Timeout(240)
class OpenApiPanelContractTest {
  /** The panel's own paths; every other {@code /api/v1} path is a mirror of a {@code /v1} one. */
  private static final List<String> OWN = List.of("/api/v1/session", "/api/v1/users", "/api/v1/overview");

  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int panel;
  static OpenApiInteractionValidator validator;
  static final List<String> findings = new ArrayList<>();

  @BeforeAll
  static void start() {
    // the session's request rate is raised: this test sends many requests in one session quickly
    cluster = TestCluster.started(1, Map.of("panel.api_rate", "1000", "panel.api_burst", "1000"));
    app = cluster.replica(0);
    http = cluster.http();
    panel = app.panelPort();
    String spec = http.get(app.coordinatorPort(), Meshplane.OPENAPI_PATH).bodyAsString();
    validator = OpenApiInteractionValidator.createForInlineApiSpecification(spec).build();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void everyPanelRouteAnswersAsTheDocumentSays() {
    JsonObject first = PanelSession.user(app, "root", "admin", "*", "*");
    String pw = PanelSession.PASSWORD;

    // the login: 400, 415, 401 (wrong password, unknown user), 200
    call("POST", "/api/v1/session", null, null, false, "{\"username\":\"root\"}", 400);
    call("POST", "/api/v1/session", null, null, false, "{\"username\":\"\",\"password\":\"" + pw + "\"}", 400);
    HttpResponse<Buffer> noSuchName = call("POST", "/api/v1/session", null, null, false, login("has space", pw), 400);
    assertEquals("username", noSuchName.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    HttpResponse<Buffer> form = http.sendRaw(HttpMethod.POST, panel, "/api/v1/session", "application/x-www-form-urlencoded",
        Buffer.buffer("username=root"));
    validate("POST", "/api/v1/session", null, null, null, null, form, 415);
    call("POST", "/api/v1/session", null, null, false, login("root", "not the password at all"), 401);
    call("POST", "/api/v1/session", null, null, false, login("nobody-at-all", "not the password at all"), 401);
    HttpResponse<Buffer> in = call("POST", "/api/v1/session", null, null, false, login("ROOT", pw), 200);
    assertTrue(in.getHeader("Set-Cookie").startsWith("__Host-meshplane_session="), in.getHeader("Set-Cookie"));
    PanelSession root = PanelSession.signIn(http, panel, "root");

    // the session: read it; without a cookie, with a bearer token, with an unknown cookie: 401
    JsonObject session = call("GET", "/api/v1/session", null, root, false, null, 200).bodyAsJsonObject();
    assertEquals(first.getString("id"), session.getJsonObject("user").getString("id"));
    assertEquals(root.csrf(), session.getString("csrf_token"));
    call("GET", "/api/v1/session", null, null, false, null, 401);
    HttpResponse<Buffer> bearer = http.get(panel, "/api/v1/session", cluster.admin());
    validate("GET", "/api/v1/session", null, null, null, null, bearer, 401);
    HttpResponse<Buffer> forgedCookie = http.send(http.request(HttpMethod.GET, panel, "/api/v1/session")
        .putHeader("Cookie", "__Host-meshplane_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    validate("GET", "/api/v1/session", null, null, null, null, forgedCookie, 401);

    // users: create (201, 400, 409, 403 csrf_failed), list, read, change
    JsonObject carol = new JsonObject().put("username", "Carol.Smith@example.org").put("password", pw).put("role", "operator")
        .put("team", "web").put("environment", "prod");
    HttpResponse<Buffer> created = call("POST", "/api/v1/users", null, root, true, carol.encode(), 201);
    JsonObject user = created.bodyAsJsonObject();
    String carolId = user.getString("id");
    assertEquals("carol.smith@example.org", user.getString("username"));
    assertEquals("/api/v1/users/" + carolId, created.getHeader("Location"));
    assertEquals("user:" + first.getString("id"), user.getString("created_by"));
    call("POST", "/api/v1/users", null, root, true, carol.encode(), 409);
    HttpResponse<Buffer> bad = call("POST", "/api/v1/users", null, root, true, new JsonObject().put("username", "has space")
        .put("password", "too short").put("role", "root").put("team", "Web").encode(), 400);
    assertEquals(5, bad.bodyAsJsonObject().getJsonArray("errors").size(), bad.bodyAsString());
    HttpResponse<Buffer> noCsrf = call("POST", "/api/v1/users", null, root, false, carol.copy().put("username", "dave").encode(), 403);
    assertEquals("csrf_failed", noCsrf.bodyAsJsonObject().getString("code"));
    call("GET", "/api/v1/users", "limit=1", root, false, null, 200);
    call("GET", "/api/v1/users", null, root, false, null, 200);
    call("GET", "/api/v1/users", "cursor=forged", root, false, null, 400);
    call("GET", "/api/v1/users/" + carolId, null, root, false, null, 200);
    call("GET", "/api/v1/users/usr_01m8000000000000000000000z", null, root, false, null, 404);
    call("GET", "/api/v1/users/not-a-user", null, root, false, null, 404);
    JsonObject patched = call("PATCH", "/api/v1/users/" + carolId, null, root, true, "{\"role\":\"viewer\",\"disabled\":true}", 200)
        .bodyAsJsonObject();
    assertEquals("viewer", patched.getString("role"));
    assertEquals(true, patched.getBoolean("disabled"));
    call("PATCH", "/api/v1/users/" + carolId, null, root, true, "{\"disabled\":false,\"role\":\"operator\"}", 200);
    call("PATCH", "/api/v1/users/" + carolId, null, root, true, "{}", 400);
    call("PATCH", "/api/v1/users/" + carolId, null, root, true, "{\"disabled\":\"yes\",\"role\":\"root\"}", 400);
    call("PATCH", "/api/v1/users/" + first.getString("id"), null, root, true, "{\"disabled\":true}", 409);
    call("PATCH", "/api/v1/users/" + first.getString("id"), null, root, true, "{\"role\":\"viewer\"}", 409);
    call("PATCH", "/api/v1/users/usr_01m8000000000000000000000z", null, root, true, "{\"disabled\":true}", 404);
    call("PATCH", "/api/v1/users/" + carolId, null, root, false, "{\"disabled\":true}", 403); // csrf_failed

    // an operator may not manage users (403 forbidden, audited); a scoped viewer's overview is estimated
    PanelSession operator = PanelSession.signIn(http, panel, "carol.smith@example.org");
    HttpResponse<Buffer> forbidden = call("GET", "/api/v1/users", null, operator, false, null, 403);
    assertEquals("forbidden", forbidden.bodyAsJsonObject().getString("code"));
    call("GET", "/api/v1/users/" + carolId, null, operator, false, null, 403);
    call("POST", "/api/v1/users", null, operator, true, carol.copy().put("username", "erin").encode(), 403);

    // a node with one heartbeat, for the overview and the mirrored node routes
    Nodes.Enrolled node = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "web-1", "web", "prod");
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(),
        Nodes.beat(1)).statusCode());
    JsonObject overview = call("GET", "/api/v1/overview", null, root, false, null, 200).bodyAsJsonObject();
    assertEquals("measured", overview.getString("heartbeats_per_second_source"));
    JsonObject scoped = call("GET", "/api/v1/overview", null, operator, false, null, 200).bodyAsJsonObject();
    assertEquals("estimated", scoped.getString("heartbeats_per_second_source"));
    call("GET", "/api/v1/overview", null, null, false, null, 401);
    // the charts' series: the whole mesh's for root, withheld for a scoped caller, a bad window refused
    JsonObject series = call("GET", "/api/v1/overview/series", "window=1h", root, false, null, 200).bodyAsJsonObject();
    assertEquals(360, series.getJsonArray("timestamps").size());
    call("GET", "/api/v1/overview/series", "window=24h", root, false, null, 200);
    assertEquals("withheld", call("GET", "/api/v1/overview/series", null, operator, false, null, 200).bodyAsJsonObject().getString("scope"));
    call("GET", "/api/v1/overview/series", "window=7d", root, false, null, 400);

    // /v1 routes served under /api/v1: their answers are the /v1 operations' (Location under /api/v1)
    call("GET", "/api/v1/nodes", "agent_version=1.4.0", operator, false, null, 200);
    call("GET", "/api/v1/nodes/" + node.id(), null, operator, false, null, 200);
    call("GET", "/api/v1/nodes/" + node.id() + "/peers", null, operator, false, null, 200);
    call("GET", "/api/v1/nodes/nd_01m8000000000000000000000z/peers", null, operator, false, null, 404);
    call("GET", "/api/v1/operations", "status=open,failed&kind=rekey&limit=5", operator, false, null, 200);
    call("GET", "/api/v1/operations", "status=done", operator, false, null, 400);
    JsonObject tokenBody = new JsonObject().put("name", "ci").put("expires", Instant.now().plus(Duration.ofDays(1)).toString())
        .put("scope", new JsonObject().put("team", "web").put("environment", "prod").put("surface", "pipeline"));
    HttpResponse<Buffer> token = call("POST", "/api/v1/auth/tokens", null, operator, true, tokenBody.encode(), 201);
    assertEquals("/api/v1/auth/tokens/" + token.bodyAsJsonObject().getString("id"), token.getHeader("Location"));
    call("GET", "/api/v1/auth/tokens/" + token.bodyAsJsonObject().getString("id"), null, operator, false, null, 200);
    call("PUT", "/api/v1/nodes/" + node.id() + "/tags", null, operator, false, "{\"tags\":[]}", 403); // csrf_failed
    call("GET", "/api/v1/auth/whoami", null, root, false, null, 404);
    // the audit trail holds the panel's events: logins (one of a name that is nobody's), user changes, denials
    JsonArray audit = call("GET", "/api/v1/audit", "limit=100", root, false, null, 200).bodyAsJsonObject().getJsonArray("items");
    assertTrue(audit.stream().map(JsonObject.class::cast).anyMatch(e -> "session.login".equals(e.getString("action"))
        && "failed".equals(e.getString("outcome")) && "unknown".equals(e.getJsonObject("actor").getString("id"))
        && "nobody-at-all".equals(e.getJsonObject("actor").getString("name")) && "*".equals(e.getString("team"))), audit.encodePrettily());
    JsonObject update = audit.stream().map(JsonObject.class::cast).filter(e -> "user.update".equals(e.getString("action"))
        && "success".equals(e.getString("outcome"))).findFirst().orElseThrow();
    assertNotNull(update.getJsonObject("details").getJsonArray("changed"), update.encode());
    assertTrue(audit.stream().map(JsonObject.class::cast).anyMatch(e -> "user.list".equals(e.getString("action"))
        && "denied".equals(e.getString("outcome"))), audit.encodePrettily());

    // five failed logins of one username from one address: the sixth try is 429, even with the right password
    PanelSession.user(app, "lockme", "viewer", "web", "prod");
    for (int i = 0; i < 5; i++) call("POST", "/api/v1/session", null, null, false, login("lockme", "wrong password " + i), 401);
    HttpResponse<Buffer> locked = call("POST", "/api/v1/session", null, null, false, login("lockme", pw), 429);
    assertTrue(Integer.parseInt(locked.getHeader("Retry-After")) >= 1, locked.getHeader("Retry-After"));

    // logout: 403 without the CSRF token, 204 with it, then the session is gone
    call("DELETE", "/api/v1/session", null, root, false, null, 403);
    HttpResponse<Buffer> out = call("DELETE", "/api/v1/session", null, root, true, null, 204);
    assertTrue(out.getHeader("Set-Cookie").contains("Max-Age=0"), out.getHeader("Set-Cookie"));
    call("GET", "/api/v1/session", null, root, false, null, 401);
    call("DELETE", "/api/v1/session", null, root, true, null, 401);
    assertEquals(List.of(), findings);
  }

  private static String login(String username, String password) {
    return new JsonObject().put("username", username).put("password", password).encode();
  }

  /**
   * Sends one request to the panel port with the session's cookie (none when {@code session} is null)
   * and, when {@code csrf}, its CSRF token; checks the status and validates the exchange against the
   * document.
   */
  private static HttpResponse<Buffer> call(String method, String path, String query, PanelSession session, boolean csrf, String body,
      int expect) {
    HttpRequest<Buffer> r = http.request(HttpMethod.valueOf(method), panel, path + (query == null ? "" : "?" + query));
    if (session != null) r.putHeader("Cookie", session.cookie());
    if (csrf) r.putHeader("X-CSRF-Token", session.csrf());
    if (body != null) r.putHeader("Content-Type", "application/json");
    HttpResponse<Buffer> resp = http.send(r, body == null ? null : body.getBytes(StandardCharsets.UTF_8));
    validate(method, path, query, session == null ? null : session.cookie(), csrf ? session.csrf() : null, body, resp, expect);
    return resp;
  }

  /**
   * Checks the status and validates the exchange: the request and the answer for a success on one of
   * the panel's own paths; only the answer for a refusal (a request wrong on purpose) and for a /v1
   * route served under /api/v1, whose answer is checked against the /v1 operation (the document
   * describes the mirror once, not per path, and its request differs only in the credential).
   */
  private static void validate(String method, String path, String query, String cookie, String csrf, String body,
      HttpResponse<Buffer> resp, int expect) {
    assertEquals(expect, resp.statusCode(), method + " " + path + " -> " + resp.bodyAsString());
    boolean own = OWN.stream().anyMatch(p -> path.equals(p) || path.startsWith(p + "/"));
    String documented = own ? path : Meshplane.COORDINATOR_PREFIX + path.substring(Meshplane.PANEL_PREFIX.length());
    SimpleResponse.Builder res = SimpleResponse.Builder.status(resp.statusCode());
    resp.headers().forEach(h -> res.withHeader(h.getKey(), h.getValue()));
    if (resp.body() != null) res.withBody(resp.bodyAsString());
    ValidationReport report;
    if (own && resp.statusCode() < 400) {
      SimpleRequest.Builder req = new SimpleRequest.Builder(Request.Method.valueOf(method), documented);
      if (query != null) {
        for (String kv : query.split("&")) {
          String[] p = kv.split("=", 2);
          req.withQueryParam(p[0], p[1]);
        }
      }
      if (cookie != null) req.withHeader("Cookie", cookie);
      if (csrf != null) req.withHeader("X-CSRF-Token", csrf);
      if (body != null) req.withContentType("application/json").withBody(body);
      report = validator.validate(req.build(), res.build());
    } else {
      report = validator.validateResponse(documented, Request.Method.valueOf(method), res.build());
    }
    for (ValidationReport.Message m : report.getMessages()) {
      if (m.getLevel() == ValidationReport.Level.ERROR) {
        findings.add(method + " " + path + " -> " + resp.statusCode() + ": " + m.getKey() + " " + m.getMessage());
      }
    }
  }
}
