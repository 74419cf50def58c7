package io.meshplane.wafpolicy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Traffic policies over HTTP on a real replica (API.md §20): a document stored only when it compiles and
 * its tests pass, each refusal naming the field and changing nothing, If-Match, shadow mode, history and
 * rollback, the preview against samples, teams kept apart, and every change and denial audited.
 */
@Timeout(120)
class WafPolicyTest {
  static LogCapture logs;
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;

  static final JsonObject DOC = new JsonObject("""
      {"managed": {"paranoia": 1},
       "rules": [{"id": "no-admin", "expression": "request.path_normalized.startsWith('/admin')",
                  "action": {"type": "deny", "status": 403, "title": "Administration is internal"}}],
       "tests": [{"name": "admin is internal", "expect": "deny", "rule": "no-admin", "request": {"target": "/admin"}},
                 {"name": "a script is refused", "expect": "deny", "rule": "mp-xss-001", "request": {"target": "/?q=%3Cscript%3E"}},
                 {"name": "shopping passes", "expect": "pass", "request": {"target": "/shop?q=shoes", "headers": {"user-agent": "Mozilla/5.0"}}}]}""");

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    port = app.coordinatorPort();
  }

  @AfterAll
  static void stop() {
    try {
      if (cluster != null) cluster.close();
    } finally {
      if (logs != null) logs.close();
    }
  }

  static HttpResponse<Buffer> put(String token, String scope, JsonObject doc, String ifMatch) {
    var r = http.request(HttpMethod.PUT, port, "/v1/waf" + scope).bearerTokenAuthentication(token);
    if (ifMatch != null) r.putHeader("If-Match", ifMatch);
    return Http.await(r.sendJsonObject(doc), 30);
  }

  static JsonObject current(String token) {
    HttpResponse<Buffer> r = http.get(port, "/v1/waf", token);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  @Test
  void aPolicyIsStoredOnlyWhenItCompilesAndItsTestsPassWithHistoryRollbackAndPreview() {
    String op = Tokens.issue(app, "shop", "prod", Surface.OPERATOR).jwt();
    JsonObject none = current(op);
    assertEquals(0, none.getLong("version"));
    assertEquals(new JsonObject(), none.getJsonObject("policy"));

    HttpResponse<Buffer> first = put(op, "", DOC, "0");
    assertEquals(200, first.statusCode(), first.bodyAsString());
    assertEquals("\"1\"", first.getHeader("ETag"));
    assertEquals(3, first.bodyAsJsonObject().getJsonObject("tests").getInteger("passed"));
    assertEquals(DOC, current(op).getJsonObject("policy"));

    // a stale If-Match, a failing test, a rule over its budget and a broken document: each refused, naming what, nothing stored
    HttpResponse<Buffer> stale = put(op, "", DOC, "0");
    assertEquals(409, stale.statusCode(), stale.bodyAsString());
    JsonObject failing = DOC.copy();
    failing.getJsonArray("tests").getJsonObject(2).getJsonObject("request").put("target", "/admin/x");
    HttpResponse<Buffer> failed = put(op, "", failing, "1");
    assertEquals(400, failed.statusCode(), failed.bodyAsString());
    JsonObject error = failed.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0);
    assertEquals("tests[2]", error.getString("field"));
    assertTrue(error.getString("message").contains("test 'shopping passes': expected pass, got deny by rule no-admin"), error.encode());
    JsonObject costly = new JsonObject().put("rules", new JsonArray().add(new JsonObject().put("id", "costly")
        .put("expression", "request.args.all(a, request.args.all(b, request.args.all(c, a + b + c != '')))").put("action", new JsonObject().put("type", "log"))));
    HttpResponse<Buffer> overBudget = put(op, "", costly, null);
    assertEquals(400, overBudget.statusCode(), overBudget.bodyAsString());
    assertEquals("rules[0].expression", overBudget.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertTrue(overBudget.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("message").contains("over the budget"),
        overBudget.bodyAsString());
    HttpResponse<Buffer> unknown = put(op, "", new JsonObject().put("managed", new JsonObject().put("disable", new JsonArray().add("mp-none-001"))), null);
    assertEquals(400, unknown.statusCode());
    assertEquals("managed.disable", unknown.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(1, current(op).getLong("version"), "nothing stored by a refusal");

    // shadow mode is a version like any other; then a rollback to version 1 makes version 3
    HttpResponse<Buffer> shadow = put(op, "", DOC.copy().put("mode", "shadow"), "1");
    assertEquals(200, shadow.statusCode(), shadow.bodyAsString());
    assertEquals("shadow", current(op).getString("mode"));
    JsonArray versions = http.get(port, "/v1/waf/versions?limit=10", op).bodyAsJsonObject().getJsonArray("items");
    assertEquals(List.of(1L, 2L), versions.stream().map(o -> ((JsonObject) o).getLong("version")).toList(), "oldest first, as the ACL's");
    assertEquals("enforce", http.get(port, "/v1/waf/versions/1", op).bodyAsJsonObject().getString("mode"));
    var restore = http.request(HttpMethod.POST, port, "/v1/waf/versions/1/restore").bearerTokenAuthentication(op).putHeader("If-Match", "\"2\"");
    HttpResponse<Buffer> restored = Http.await(restore.send(), 30);
    assertEquals(200, restored.statusCode(), restored.bodyAsString());
    assertEquals(3, restored.bodyAsJsonObject().getLong("version"));
    assertEquals(1, restored.bodyAsJsonObject().getLong("restored_from"));
    assertEquals("enforce", current(op).getString("mode"));
    assertEquals(404, http.get(port, "/v1/waf/versions/9", op).statusCode());

    // the preview: what a stricter candidate would decide differently, nothing stored
    JsonObject stricter = DOC.copy();
    stricter.getJsonArray("rules").add(new JsonObject().put("id", "no-search").put("expression", "'q' in request.query")
        .put("action", new JsonObject().put("type", "deny").put("status", 403)));
    JsonArray samples = new JsonArray().add(new JsonObject().put("target", "/shop?q=shoes")).add(new JsonObject().put("target", "/about"))
        .add(new JsonObject().put("target", "/admin"));
    HttpResponse<Buffer> preview = http.send(HttpMethod.POST, port, "/v1/waf/preview", op, new JsonObject().put("policy", stricter).put("samples", samples));
    assertEquals(200, preview.statusCode(), preview.bodyAsString());
    JsonObject p = preview.bodyAsJsonObject();
    assertEquals(3, p.getLong("current_version"));
    assertEquals(1, p.getInteger("changed"), p.encode());
    JsonObject changed = p.getJsonArray("samples").getJsonObject(0);
    assertTrue(changed.getBoolean("changed"));
    assertEquals("pass", changed.getJsonObject("current").getString("outcome"));
    assertEquals("no-search", changed.getJsonObject("candidate").getString("rule"));
    assertFalse(p.getJsonArray("samples").getJsonObject(2).getBoolean("changed"), "denied by both");
    assertFalse(p.getJsonArray("tests").getJsonObject(2).getBoolean("passed"), "the candidate's own test of a search now fails");
    HttpResponse<Buffer> badSample = http.send(HttpMethod.POST, port, "/v1/waf/preview", op,
        new JsonObject().put("policy", DOC).put("samples", new JsonArray().add(new JsonObject().put("target", "x"))));
    assertEquals(400, badSample.statusCode());
    assertEquals("samples[0].target", badSample.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    HttpResponse<Buffer> badCandidate = http.send(HttpMethod.POST, port, "/v1/waf/preview", op,
        new JsonObject().put("policy", new JsonObject().put("mode", "loud")).put("samples", new JsonArray()));
    assertEquals("policy.mode", badCandidate.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(3, current(op).getLong("version"), "a preview stores nothing");

    // the audit trail: two updates and a rollback
    JsonArray updates = http.get(port, "/v1/audit?action=waf.update&limit=50", op).bodyAsJsonObject().getJsonArray("items");
    assertEquals(2, updates.stream().filter(o -> "success".equals(((JsonObject) o).getString("outcome"))).count(), updates.encode());
    JsonArray rollbacks = http.get(port, "/v1/audit?action=waf.rollback&limit=50", op).bodyAsJsonObject().getJsonArray("items");
    assertEquals(1, rollbacks.size(), rollbacks.encode());
    assertEquals(1, rollbacks.getJsonObject(0).getJsonObject("details").getLong("restored_from"));
  }

  @Test
  void teamsAreKeptApartAndAReadOnlyCredentialIsRefusedAndAudited() {
    String north = Tokens.issue(app, "north", "prod", Surface.OPERATOR).jwt();
    String south = Tokens.issue(app, "south", "prod", Surface.OPERATOR).jwt();
    assertEquals(200, put(north, "", DOC, null).statusCode());
    assertEquals(404, http.get(port, "/v1/waf?team=north&environment=prod", south).statusCode(), "another team's policy does not exist for it");
    assertEquals(404, put(south, "?team=north&environment=prod", DOC, null).statusCode());
    assertEquals(1, current(north).getLong("version"));
    assertEquals(0, current(south).getLong("version"));

    String monitoring = Tokens.issue(app, "north", "prod", Surface.MONITORING).jwt();
    assertEquals(200, http.get(port, "/v1/waf", monitoring).statusCode(), "waf:read");
    HttpResponse<Buffer> refused = put(monitoring, "", DOC, null);
    assertEquals(403, refused.statusCode(), refused.bodyAsString());
    JsonArray trail = http.get(port, "/v1/audit?action=waf.update&limit=10", north).bodyAsJsonObject().getJsonArray("items");
    assertEquals(1, trail.stream().filter(o -> "denied".equals(((JsonObject) o).getString("outcome"))).count(), trail.encode());
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace for a refusal");
  }
}
