package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ingress routes (API.md §19) and what they add to heartbeats and node records, against the
 * OpenAPI document: successes and refusals, each with the status it must have.
 */
@Timeout(120)
class OpenApiIngressContractTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    contract = new ContractCheck(http, port, http.get(port, Meshplane.OPENAPI_PATH).bodyAsString());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void everyIngressRouteAnswersAsTheDocumentSays() {
    String root = cluster.admin();
    String monitoring = Tokens.issue(app, "ing", "prod", Surface.MONITORING).jwt();
    JsonObject edge = check("POST", "/v1/nodes", root, new JsonObject().put("name", "edge-1").put("public_key", Nodes.key()).put("team", "ing")
        .put("environment", "prod").put("tags", new JsonArray().add("tag:edge")).encode(), null, null, 201);
    JsonObject web = check("POST", "/v1/nodes", root, new JsonObject().put("name", "web-1").put("public_key", Nodes.key()).put("team", "ing")
        .put("environment", "prod").put("tags", new JsonArray().add("tag:web")).encode(), null, null, 201);
    String webId = web.getJsonObject("node").getString("id");
    String edgeId = edge.getJsonObject("node").getString("id");
    String agent = edge.getJsonObject("credential").getString("token");
    check("PUT", "/v1/nodes/" + webId + "/services", root, new JsonObject().put("services", new JsonArray().add("web:8080")).encode(), null, null,
        200);
    JsonObject route = new JsonObject().put("team", "ing").put("environment", "prod").put("hostname", "app.example.com")
        .put("target", new JsonObject().put("node", webId).put("service", "web")).put("exposure", "public").put("tls", "acme")
        .put("ingress_tag", "tag:edge");
    // refused by the policy (no grant yet), then allowed
    check("POST", "/v1/ingress/routes", root, route.encode(), null, null, 409);
    check("PUT", "/v1/acl", root, new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:edge"))
        .put("dst", new JsonArray().add("tag:web")).put("ports", new JsonArray().add("tcp/8080")))).encode(), "team=ing&environment=prod", null,
        200);
    String id = check("POST", "/v1/ingress/routes", root, route.encode(), null, null, 201).getString("id");
    check("POST", "/v1/ingress/routes", root, route.copy().put("hostname", "Bad.example.com.").encode(), null, null, 400);
    check("POST", "/v1/ingress/routes", monitoring, route.encode(), null, null, 403);
    check("GET", "/v1/ingress/routes", monitoring, null, "team=ing&environment=prod&limit=1", null, 200);
    check("GET", "/v1/ingress/routes", root, null, "hostname=*.example", null, 400);
    check("GET", "/v1/ingress/routes/" + id, monitoring, null, null, null, 200);
    check("GET", "/v1/ingress/routes/ir_01m8000000000000000000000z", root, null, null, null, 404);
    check("PUT", "/v1/ingress/routes/" + id, root, route.copy().put("exposure", "mesh").put("tls", "meshca").encode(), null, "\"9\"", 409);
    check("PUT", "/v1/ingress/routes/" + id, root, route.copy().put("exposure", "mesh").put("tls", "meshca").encode(), null, "\"1\"", 200);
    // a traffic policy: sent with the routes (the block's waf), reported back with the WAF's counters and a sample
    check("PUT", "/v1/waf", root, new JsonObject().put("mode", "enforce").put("rules", new JsonArray().add(new JsonObject().put("id", "no-admin")
        .put("expression", "request.path.startsWith('/admin')").put("action", new JsonObject().put("type", "deny").put("status", 403)))).encode(),
        "team=ing&environment=prod", null, 200);
    // the heartbeat: the full block, then unchanged; the node record with ingress_sync and ingress_stats
    JsonObject full = check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, "{}", null, null, 200).getJsonObject("ingress_routes");
    assertEquals(1, full.getJsonObject("waf").getJsonObject("enforce").getInteger("version"), full.encode());
    JsonObject waf = new JsonObject().put("version", "1").put("enforce", 1).putNull("shadow").putNull("error")
        .put("probe", new JsonObject().put("version", "1").put("passed", true).put("status", 403).put("at", 1798761600L).putNull("detail"))
        .put("samples", new JsonArray().add(new JsonObject().put("at", 1798761600L).put("route", id).put("rule", "no-admin").put("outcome", "deny")
            .put("status", 403).put("request", new JsonObject().put("method", "GET").put("target", "/admin?token=[redacted]").put("client_ip", "192.0.2.7")
                .putNull("body").put("headers", new JsonArray().add(new JsonArray().add("user-agent").add("curl/8"))))));
    JsonObject withWaf = new JsonObject().put("version", full.getString("version")).put("waf", waf).put("routes", new JsonObject().put(id,
        new JsonObject().put("requests", 1).put("errors", 0).put("active", 0).put("bytes_in", 0).put("bytes_out", 0).putNull("serial")
            .put("status_classes", new JsonObject().put("2xx", 0).put("3xx", 0).put("4xx", 1).put("5xx", 0))
            .put("waf", new JsonObject().put("evaluated", 1).put("denied", 1).put("logged", 0).put("rate_limited", 0).put("would_deny", 0)
                .put("errors", 0).put("busy", 0).put("rules", new JsonObject().put("no-admin", 1)))));
    check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, new JsonObject().put("ingress_routes", withWaf).encode(), null, null, 200);
    JsonObject record = check("GET", "/v1/nodes/" + edgeId, root, null, null, null, 200);
    assertEquals("passed", record.getJsonObject("waf_sync").getJsonObject("probe").getString("state"), record.encode());
    assertEquals(1, check("GET", "/v1/waf/samples", root, null, "team=ing&environment=prod", null, 200).getJsonArray("samples").size());
    JsonObject badSample = withWaf.copy();
    badSample.getJsonObject("waf").getJsonArray("samples").getJsonObject(0).put("route", "nope");
    check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, new JsonObject().put("ingress_routes", badSample).encode(), null, null, 400);
    JsonObject report = new JsonObject().put("version", full.getString("version")).put("routes", new JsonObject().put(id,
        new JsonObject().put("requests", 3).put("errors", 0).put("active", 1).put("bytes_in", 10).put("bytes_out", 20).putNull("serial")
            .put("not_after", 1798761600L).put("acme_error", "http-01 for shop.example.com failed: connection refused")
            .put("status_classes", new JsonObject().put("2xx", 3).put("3xx", 0).put("4xx", 0).put("5xx", 0))));
    check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, new JsonObject().put("ingress_routes", report).encode(), null, null, 200);
    check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, new JsonObject().put("ingress_routes", new JsonObject().put("version", 7)).encode(),
        null, null, 400);
    JsonObject badError = report.copy();
    badError.getJsonObject("routes").getJsonObject(id).put("acme_error", "x".repeat(201));
    check("POST", "/v1/nodes/" + edgeId + "/heartbeat", agent, new JsonObject().put("ingress_routes", badError).encode(), null, null, 400);
    check("GET", "/v1/nodes/" + edgeId, root, null, null, null, 200);
    check("GET", "/v1/nodes", root, null, "team=ing", null, 200);
    check("DELETE", "/v1/ingress/routes/" + id, root, null, null, "\"1\"", 409);
    assertEquals(null, check("DELETE", "/v1/ingress/routes/" + id, root, null, null, "\"2\"", 204));
    assertEquals(List.of(), contract.findings());
  }

  private static JsonObject check(String method, String path, String bearer, String body, String query, String ifMatch, int expect) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, ifMatch);
    assertEquals(expect, resp.statusCode(), method + " " + path + " -> " + resp.bodyAsString());
    String type = resp.getHeader("Content-Type");
    return type != null && type.contains("json") && resp.body() != null ? resp.bodyAsJsonObject() : null;
  }

}
