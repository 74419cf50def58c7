package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.yaml.snakeyaml.Yaml;

/**
 * openapi.yaml cannot drift from what the server does: the document served at /v1/openapi.yaml lists
 * exactly the routes the replica mounts, and real requests and responses of every route (successes
 * and problems) are checked against it with a maintained validator (Atlassian's
 * swagger-request-validator).
 */
@Timeout(180)
class OpenApiContractTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static String spec;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    spec = http.get(port, Meshplane.OPENAPI_PATH).bodyAsString();
    contract = new ContractCheck(http, port, spec);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  /**
   * The document lists exactly what the replica serves. The coordinator API's routes (and the probes,
   * metrics and the document itself) are listed under their own paths. The panel API's routes are
   * either its own, listed under {@code /api/v1/...}, or a mirror of a listed {@code /v1} route (the
   * same route under {@code /api/v1}), which the document describes once, in {@code info.description}
   * and the "Web panel" tag, rather than listing it twice. A route mounted that is neither listed nor
   * a mirror, or listed and not mounted, fails; so does a change to which {@code /v1} routes the
   * panel leaves out (the document names them: the heartbeat and whoami).
   */
  @Test
  @SuppressWarnings("unchecked")
  void theDocumentListsExactlyTheMountedRoutes() {
    Map<String, Object> doc = new Yaml().load(spec);
    Set<String> documented = new TreeSet<>();
    for (Map.Entry<String, Object> path : ((Map<String, Object>) doc.get("paths")).entrySet()) {
      for (String method : ((Map<String, Object>) path.getValue()).keySet()) {
        if (Set.of("get", "put", "post", "delete", "patch").contains(method)) documented.add(method.toUpperCase() + " " + path.getKey());
      }
    }
    Set<String> coordinator = new TreeSet<>(List.of("GET /healthz", "GET /readyz", "GET /metrics", "GET " + Meshplane.OPENAPI_PATH));
    Set<String> panelOwn = new TreeSet<>();
    Set<String> mirrored = new TreeSet<>();
    Set<String> neither = new TreeSet<>();
    List<String> names = new ArrayList<>();
    for (Api api : app.apis()) {
      names.add(api.name());
      for (Api.Declared d : api.declared()) {
        String route = d.method().name() + " " + d.path();
        if (api.name().equals("coordinator")) {
          assertTrue(d.path().startsWith(Meshplane.COORDINATOR_PREFIX + "/"), route);
          coordinator.add(route);
          continue;
        }
        assertEquals("panel", api.name(), route);
        assertTrue(d.path().startsWith(Meshplane.PANEL_PREFIX + "/"), route);
        String original = d.method().name() + " " + Meshplane.COORDINATOR_PREFIX + d.path().substring(Meshplane.PANEL_PREFIX.length());
        if (documented.contains(route)) panelOwn.add(route);
        else if (documented.contains(original)) mirrored.add(original);
        else neither.add(route);
      }
    }
    assertEquals(List.of("coordinator", "panel"), names);
    assertEquals(Set.of(), neither, "panel routes neither documented under /api/v1 nor mirrors of a documented /v1 route");
    Set<String> served = new TreeSet<>(coordinator);
    served.addAll(panelOwn);
    assertEquals(served, documented);
    // the document says which /v1 routes the panel does not serve: exactly these
    Set<String> notMirrored = new TreeSet<>(coordinator);
    notMirrored.removeAll(mirrored);
    assertEquals(new TreeSet<>(List.of("GET /healthz", "GET /readyz", "GET /metrics", "GET " + Meshplane.OPENAPI_PATH,
        "POST /v1/nodes/{id}/heartbeat", "GET /v1/nodes/{id}/watch", "POST /v1/meshca/hostname-certificates", "GET /v1/auth/whoami")), notMirrored);
    String description = (String) ((Map<String, Object>) doc.get("info")).get("description");
    assertTrue(description.contains("except `POST /v1/nodes/{id}/heartbeat`, `GET /v1/nodes/{id}/watch`, `POST /v1/meshca/hostname-certificates` "
        + "and `GET /v1/auth/whoami`"), description);
    // and the "Web panel" tag lists the mirrored routes one by one: `/nodes/{id}` (GET, DELETE)
    String tag = ((List<Map<String, Object>>) doc.get("tags")).stream().filter(t -> "Web panel".equals(t.get("name")))
        .map(t -> (String) t.get("description")).findFirst().orElseThrow();
    Set<String> listed = new TreeSet<>();
    Matcher m = Pattern.compile("`(/[^`\\s]+)`\\s+\\(([A-Z,\\s]+)\\)").matcher(tag);
    while (m.find()) {
      for (String method : m.group(2).trim().split(",\\s*")) listed.add(method + " " + Meshplane.COORDINATOR_PREFIX + m.group(1));
    }
    assertEquals(mirrored, listed, "the routes the Web panel tag lists as served under /api/v1");
  }

  @Test
  void realAnswersOfEveryRouteMatchTheDocument() {
    String root = cluster.admin();
    String in1d = Instant.now().plus(Duration.ofDays(1)).toString();

    check("GET", "/healthz", null, null, null);
    check("GET", "/readyz", null, null, null);
    check("GET", "/metrics", null, null, null);
    check("GET", "/v1/openapi.yaml", null, null, null);
    check("GET", "/v1/auth/whoami", root, null, null);

    JsonObject tokenBody = new JsonObject().put("name", "deploy bot").put("expires", in1d)
        .put("scope", new JsonObject().put("team", "web").put("surface", "pipeline").put("environment", "prod"));
    JsonObject created = check("POST", "/v1/auth/tokens", root, tokenBody.encode(), null);
    String tokenId = created.getString("id");
    check("POST", "/v1/auth/tokens", root, tokenBody.copy().put("name", "").encode(), null); // 400
    check("GET", "/v1/auth/tokens", root, null, "limit=1");
    check("GET", "/v1/auth/tokens/" + tokenId, root, null, null);
    check("GET", "/v1/auth/tokens/tok_01m8000000000000000000000z", root, null, null); // 404
    JsonObject rotated = check("POST", "/v1/auth/tokens/" + tokenId + "/rotate", root,
        new JsonObject().put("expires", in1d).put("retire_old_in", "1h").encode(), null);
    check("POST", "/v1/auth/tokens/" + tokenId + "/rotate", root, new JsonObject().put("expires", in1d).encode(), null); // 409
    check("DELETE", "/v1/auth/tokens/" + rotated.getString("id"), root, null, null);
    check("GET", "/v1/auth/whoami", created.getString("token"), null, null); // 401 token_expired or fine until retired
    check("POST", "/v1/auth/tokens", created.getString("token"), tokenBody.encode(), null); // 403 or 401

    JsonObject enroll = new JsonObject().put("name", "web-1").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod")
        .put("tags", new io.vertx.core.json.JsonArray().add("tag:web"));
    JsonObject enrolled = check("POST", "/v1/nodes", root, enroll.encode(), null);
    check("POST", "/v1/nodes", root, enroll.encode(), null); // 409
    String nodeId = enrolled.getJsonObject("node").getString("id");
    String agent = enrolled.getJsonObject("credential").getString("token");
    check("POST", "/v1/nodes/" + nodeId + "/heartbeat", agent, Nodes.beat(1).encode(), null);
    check("POST", "/v1/nodes/" + nodeId + "/heartbeat", agent, "{}", null);
    check("POST", "/v1/nodes/" + nodeId + "/heartbeat", agent, "{\"endpoints\":[\"x\"]}", null); // 400
    check("POST", "/v1/nodes/" + nodeId + "/heartbeat", root, "{}", null); // 403
    check("GET", "/v1/nodes", root, null, "limit=1");
    check("GET", "/v1/nodes", root, null, "status=gone"); // 400
    check("GET", "/v1/nodes/" + nodeId, root, null, null);
    // the node's peers and inbound rules, as its agent holds them
    assertEquals(200, contract.exchange("GET", "/v1/nodes/" + nodeId + "/peers", root, null, null, null).statusCode());
    assertEquals(404, contract.exchange("GET", "/v1/nodes/nd_01m8000000000000000000000z/peers", root, null, null, null).statusCode());
    assertEquals(404, contract.exchange("GET", "/v1/nodes/not-a-node/peers", root, null, null, null).statusCode());
    // the agent_version filter reads the flushed telemetry: the node is listed once a heartbeat that reports it is written
    check("POST", "/v1/nodes/" + nodeId + "/heartbeat", agent, Nodes.beat(2).encode(), null);
    JsonObject byVersion = Await.until("the node listed by agent_version", 10_000,
        () -> check("GET", "/v1/nodes", root, null, "agent_version=1.4.0"), page -> !page.getJsonArray("items").isEmpty());
    assertEquals(1, byVersion.getJsonArray("items").size(), byVersion.encode());
    assertEquals(0, check("GET", "/v1/nodes", root, null, "agent_version=1.4.1").getJsonArray("items").size());
    HttpResponse<Buffer> badVersion = contract.exchange("GET", "/v1/nodes", root, null, "agent_version=1.4.0%2F", null);
    assertEquals(400, badVersion.statusCode(), badVersion.bodyAsString());
    assertEquals("agent_version", badVersion.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    check("GET", "/v1/events", root, null, "limit=5");
    check("GET", "/v1/audit", root, null, "limit=3");
    check("GET", "/v1/audit", root, null, "cursor=forged"); // 400
    check("DELETE", "/v1/nodes/" + nodeId, root, null, null);
    check("GET", "/v1/nodes/" + nodeId, root, null, null); // 404
    assertEquals(404, contract.exchange("GET", "/v1/nodes/" + nodeId + "/peers", root, null, null, null).statusCode());
    check("POST", "/v1/nodes", root, "{\"name\":", null); // 400 malformed
    assertEquals(List.of(), contract.findings());
  }

  /** Sends one request, validates request and answer against the document, returns the answer's JSON (or null). */
  private static JsonObject check(String method, String path, String bearer, String body, String query) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, null);
    assertTrue(resp.statusCode() < 500, method + " " + path + " -> " + resp.statusCode() + " " + resp.bodyAsString());
    String type = resp.getHeader("Content-Type");
    return type != null && type.contains("json") ? resp.bodyAsJsonObject() : null;
  }
}
