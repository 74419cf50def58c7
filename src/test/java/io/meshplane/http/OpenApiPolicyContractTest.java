package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(240)
/**
 * The policy routes, re-tag, relays and the new heartbeat answers against the OpenAPI document: every
 * request and answer (successes and refusals) validated with the same validator as
 * {@link OpenApiContractTest}, each with the status it must have.
 */
class OpenApiPolicyContractTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"nyc1\",\"region\":\"us\",\"url\":\"https://nyc1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms"));
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    String spec = http.get(port, Meshplane.OPENAPI_PATH).bodyAsString();
    contract = new ContractCheck(http, port, spec);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static JsonObject grant(String src, String dst, String... ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray(List.of(ports)));
  }

  @Test
  void everyPolicyRouteAnswersAsTheDocumentSays() throws Exception {
    String root = cluster.admin();
    String q = "team=web&environment=prod";
    check("GET", "/v1/acl", root, null, q, null, 0); // version 0
    check("GET", "/v1/acl/versions", root, null, q, null, 0); // empty
    JsonObject e1 = check("POST", "/v1/nodes", root, new JsonObject().put("name", "web-1").put("public_key", Nodes.key()).put("team", "web")
        .put("environment", "prod").put("tags", new JsonArray().add("tag:web")).put("region", "eu").encode(), null, null, 201);
    JsonObject e2 = check("POST", "/v1/nodes", root, new JsonObject().put("name", "db-1").put("public_key", Nodes.key()).put("team", "web")
        .put("environment", "prod").put("tags", new JsonArray().add("tag:db")).encode(), null, null, 201);
    check("POST", "/v1/nodes", root, new JsonObject().put("name", "x-1").put("public_key", Nodes.key()).put("team", "web")
        .put("environment", "prod").put("region", "mars").encode(), null, null, 400); // 400
    String web = e1.getJsonObject("node").getString("id");
    String webTok = e1.getJsonObject("credential").getString("token");
    String db = e2.getJsonObject("node").getString("id");
    String dbTok = e2.getJsonObject("credential").getString("token");
    JsonObject policy = new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432"))
        .add(grant("10.20.0.0/16", "tag:web", "tcp/443", "tcp/8000-8100")).add(grant("*", "*", "icmp")))
        .put("tests", new JsonArray().add(new JsonObject().put("src", "web-1").put("accept", new JsonArray().add("db-1:tcp/5432"))));
    check("PUT", "/v1/acl", root, policy.encode(), q, "\"0\"", 0);
    check("PUT", "/v1/acl", root, policy.encode(), q, "\"0\"", 409); // 409
    check("PUT", "/v1/acl", root, new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/0"))).encode(), q, null, 400); // 400
    check("PUT", "/v1/acl", root, policy.copy().put("tests", new JsonArray().add(new JsonObject().put("src", "web-1")
        .put("deny", new JsonArray().add("db-1:tcp/5432")))).encode(), q, null, 400); // 400 failing test
    check("PUT", "/v1/acl", root, policy.encode(), q, "W/\"1\"", 400); // 400 If-Match
    check("PUT", "/v1/acl", root, new JsonObject().put("grants", new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432"))).encode(), q, "1", 0);
    check("GET", "/v1/acl", root, null, q, null, 0);
    check("GET", "/v1/acl", root, null, null, null, 400); // 400 team required for '*'
    check("GET", "/v1/acl/versions", root, null, q + "&limit=1", null, 0);
    check("GET", "/v1/acl/versions/1", root, null, q, null, 0);
    check("GET", "/v1/acl/versions/9", root, null, q, null, 404); // 404
    check("POST", "/v1/acl/versions/1/restore", root, null, q, "2", 0);
    check("POST", "/v1/acl/versions/1/restore", root, null, q, "2", 409); // 409
    check("POST", "/v1/acl/preview", root, new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray())).put("node", "web-1").encode(), q, null, 0);
    check("POST", "/v1/acl/preview", root, new JsonObject().put("policy", policy).put("src", "web-1").put("dst", "tag:db").put("port", "tcp/5432").encode(), q, null, 0);
    check("POST", "/v1/acl/preview", root, new JsonObject().put("policy", policy).put("src", "web-1").put("dst", "db-1").put("port", "icmp").encode(), q, null, 0);
    check("POST", "/v1/acl/preview", root, new JsonObject().put("policy", policy).encode(), q, null, 400); // 400
    check("POST", "/v1/acl/impact", root, new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray())).encode(), q, null, 0);
    check("POST", "/v1/acl/impact", root, new JsonObject().put("policy", policy.copy().put("grants", policy.getJsonArray("grants").copy()
        .add(grant("tag:db", "tag:web", "udp/53", "tcp/*")))).encode(), q, null, 0);
    check("POST", "/v1/acl/impact", root, new JsonObject().put("policy", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/0")))).encode(), q, null, 400); // 400
    // heartbeats: full, unchanged, delta
    JsonObject h1 = check("POST", "/v1/nodes/" + web + "/heartbeat", webTok, Nodes.beat(1).encode(), null, null, 0);
    JsonObject h2 = check("POST", "/v1/nodes/" + db + "/heartbeat", dbTok, "{}", null, null, 0);
    long pv = h1.getJsonObject("peers").getLong("version");
    long av = h1.getJsonObject("acl").getLong("version");
    check("POST", "/v1/nodes/" + web + "/heartbeat", webTok, new JsonObject().put("known", new JsonObject().put("peers", pv).put("acl", av)).encode(), null, null, 0);
    // db-1's first heartbeat flushed and applied: web-1's peers changed since pv (a delta is sent)
    Await.until("web-1's answer carries its changed peers", () -> check("POST", "/v1/nodes/" + web + "/heartbeat", webTok,
        new JsonObject().put("known", new JsonObject().put("peers", pv).put("acl", av)).encode(), null, null, 0).getJsonObject("peers"),
        peers -> !peers.getBoolean("unchanged", false));
    check("GET", "/v1/nodes/" + web, root, null, null, null, 0);
    check("GET", "/v1/nodes/" + db, root, null, null, null, 0);
    check("PUT", "/v1/nodes/" + db + "/tags", root, new JsonObject().put("tags", new JsonArray().add("tag:web").add("tag:db")).encode(), null, null, 0);
    check("PUT", "/v1/nodes/" + db + "/tags", root, "{}", null, null, 400); // 400
    check("PUT", "/v1/nodes/nd_01m8000000000000000000000z/tags", root, "{\"tags\":[]}", null, null, 404); // 404
    check("GET", "/v1/relays", root, null, null, null, 0);
    for (int i = 0; i < 6; i++) {
      check("POST", "/v1/nodes/" + web + "/heartbeat", webTok, new JsonObject().put("known", new JsonObject().put("peers", 0).put("acl", 0)).encode(), null, null, 0);
    }
    // the node stays behind the ACL it is sent: its drift event exists before the event list is checked
    Await.until("web-1's policy drift event", () -> check("GET", "/v1/events", root, null, "type=node.policy_drift&node_id=" + web, null, 0)
        .getJsonArray("items"), items -> !items.isEmpty());
    check("GET", "/v1/events", root, null, null, null, 0);
    check("GET", "/v1/events", root, null, "type=node.policy_drift", null, 0);
    check("GET", "/v1/audit", root, null, "limit=20", null, 0);
    check("GET", "/v1/nodes", root, null, null, null, 0);
    String mon = io.meshplane.testing.Tokens.issue(app, "web", "prod", io.meshplane.access.Surface.PIPELINE).jwt();
    check("GET", "/v1/acl", mon, null, q, null, 403); // 403
    check("GET", "/v1/audit", root, null, "action=acl.read", null, 0);
    assertEquals(List.of(), contract.findings());
  }

  /** Sends, validates against the document, and checks the status ({@code expect} 0: any 2xx). */
  private static JsonObject check(String method, String path, String bearer, String body, String query, String ifMatch, int expect) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, ifMatch);
    if (expect == 0) {
      assertTrue(resp.statusCode() < 300, method + " " + path + " -> " + resp.statusCode() + " " + resp.bodyAsString());
    } else {
      assertEquals(expect, resp.statusCode(), method + " " + path + " -> " + resp.bodyAsString());
    }
    String type = resp.getHeader("Content-Type");
    return type != null && type.contains("json") ? resp.bodyAsJsonObject() : null;
  }
}
