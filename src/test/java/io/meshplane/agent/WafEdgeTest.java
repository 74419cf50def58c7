package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Traffic policies enforced at the edge, end to end (API.md §20): a policy PUT through {@code /v1/waf}
 * reaches a real edge agent in its answers, is compiled there by the same code, and decides real
 * requests through the agent's ingress listener; the node record shows {@code waf_sync} current, the
 * probe passed, the WAF's counters and redacted samples. Shadow mode denies nothing and counts, rate
 * limits count per key, a body is inspected and still reaches the target whole, and another team's
 * policy changes nothing here.
 */
@Timeout(180)
class WafEdgeTest {
  static TestCluster cluster;
  static Http http;
  static int port;
  static String admin;
  static final String TEAM = "wafe2e";
  static final String HOST = "app.waf.example.com";
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "writebehind.flush_interval", "100ms", "metrics.gauge_interval", "1s"));
    http = cluster.http();
    port = cluster.replica(0).coordinatorPort();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  private static HttpResponse<Buffer> send(HttpMethod m, String path, JsonObject body) {
    return http.send(m, port, path, admin, body);
  }

  static long putPolicy(String team, JsonObject doc) {
    long current = http.get(port, "/v1/waf?team=" + team + "&environment=prod", admin).bodyAsJsonObject().getLong("version");
    var r = http.request(HttpMethod.PUT, port, "/v1/waf?team=" + team + "&environment=prod").bearerTokenAuthentication(admin)
        .putHeader("If-Match", "\"" + current + "\"").putHeader("Content-Type", "application/json");
    HttpResponse<Buffer> a = http.send(r, doc.toBuffer().getBytes());
    assertEquals(200, a.statusCode(), a.bodyAsString());
    return a.bodyAsJsonObject().getLong("version");
  }

  static JsonObject policy(String mode) {
    return new JsonObject().put("mode", mode).put("managed", new JsonObject().put("paranoia", 1)).put("rules", new JsonArray()
        .add(new JsonObject().put("id", "no-admin").put("expression", "request.path_normalized.startsWith('/admin')")
            .put("action", new JsonObject().put("type", "deny").put("status", 403).put("title", "Administration is internal")))
        .add(new JsonObject().put("id", "per-client").put("expression", "request.path_normalized.startsWith('/limited')")
            .put("action", new JsonObject().put("type", "rate_limit").put("key", "request.headers['x-client'][0]").put("window_seconds", 3600)
                .put("limit", 2)))
        .add(new JsonObject().put("id", "watch-search").put("expression", "'q' in request.query").put("action", new JsonObject().put("type", "log"))));
  }

  @Test
  void aPolicyPutThroughTheApiIsEnforcedAtTheEdgeProvenAndReported() throws Exception {
    try (IngressFixture.Target target = new IngressFixture.Target("web")) {
      String edgeToken = Tokens.issue(cluster.replica(0), TEAM, "prod", Surface.ENROLLMENT).jwt();
      JsonObject enrolled = send(HttpMethod.POST, "/v1/nodes", new JsonObject().put("name", "waf-web").put("public_key", io.meshplane.testing.Nodes.key())
          .put("team", TEAM).put("environment", "prod").put("tags", new JsonArray().add("tag:web"))).bodyAsJsonObject();
      String webId = enrolled.getJsonObject("node").getString("id");
      String webAddress = enrolled.getJsonObject("node").getString("address").replaceAll("/.*", "");
      assertEquals(200, send(HttpMethod.PUT, "/v1/nodes/" + webId + "/services",
          new JsonObject().put("services", new JsonArray().add("web:" + target.port()))).statusCode());
      JsonObject grant = new JsonObject().put("src", new JsonArray().add("tag:edge")).put("dst", new JsonArray().add("tag:web"))
          .put("ports", new JsonArray().add("tcp/" + target.port()));
      assertEquals(200, send(HttpMethod.PUT, "/v1/acl?team=" + TEAM + "&environment=prod", new JsonObject().put("grants", new JsonArray().add(grant)))
          .statusCode());
      NodeAgent edge = NodeAgent.start(new NodeAgent.Settings(io.meshplane.agent.Coordinators.parse(List.of("http://127.0.0.1:" + port)), edgeToken,
          "waf-edge", List.of("tag:edge"), dir.resolve("edge"), "127.0.0.1", 0, Backoff.standard(), true)
          .withIngress(new IngressEdge.Settings("127.0.0.1", 0).withOverrides(Map.of(webAddress, "127.0.0.1"))));
      try {
        String edgeId = AgentBehaviourTest.nodeId(edge);
        HttpResponse<Buffer> created = send(HttpMethod.POST, "/v1/ingress/routes", new JsonObject().put("team", TEAM).put("environment", "prod")
            .put("hostname", HOST).put("path_prefix", "/").put("target", new JsonObject().put("node", webId).put("service", "web"))
            .put("exposure", "public").put("tls", "meshca").put("ingress_tag", "tag:edge"));
        assertEquals(201, created.statusCode(), created.bodyAsString());
        String routeId = created.bodyAsJsonObject().getString("id");
        Await.until("the route at the edge", 20_000, () -> edge.ingress().table().routes().size() == 1);
        int in = edge.ingress().plainPort();
        // before any policy: an attack goes through (nothing enforces yet)
        assertEquals(200, get(in, "/search?q=%3Cscript%3Ealert(1)%3C/script%3E").status());

        long v1 = putPolicy(TEAM, policy("enforce"));
        JsonObject node = Await.until("the edge enforcing version " + v1 + ", proven by its probe", 30_000,
            () -> http.get(port, "/v1/nodes/" + edgeId, admin).bodyAsJsonObject(),
            n -> n.getJsonObject("waf_sync") != null && "current".equals(n.getJsonObject("waf_sync").getString("state"))
                && "passed".equals(n.getJsonObject("waf_sync").getJsonObject("probe").getString("state")));
        assertEquals(Long.toString(v1), node.getJsonObject("waf_sync").getString("acknowledged"), node.encode());
        assertEquals(v1, node.getJsonObject("waf_sync").getLong("enforcing"));

        // the managed set and the custom rules decide; a denial is the product's problem, naming the rule
        IngressFixture.Answer xss = get(in, "/search?q=%3Cscript%3Ealert(1)%3C/script%3E", "Cookie: session=abc", "Authorization: Bearer sekrit");
        assertEquals(403, xss.status(), xss.body());
        assertEquals("waf_denied", xss.json().getString("code"));
        assertTrue(xss.json().getString("rule").startsWith("mp-xss"), xss.body());
        assertEquals(v1, xss.json().getLong("policy_version"));
        assertEquals(xss.headers().get("x-request-id"), xss.json().getString("request_id"));
        assertEquals(403, get(in, "/admin/users").status());
        IngressFixture.Answer ok = get(in, "/search?q=union+station");
        assertEquals(200, ok.status(), ok.body());
        assertEquals("web", ok.json().getString("server"));
        // a body is inspected: a SQL injection in JSON is refused, a large benign body reaches the target whole
        IngressFixture.Answer sqli = post(in, "/api/v1/comments", "{\"author\": \"x\", \"q\": \"' OR '1'='1\"}");
        assertEquals(403, sqli.status(), sqli.body());
        String big = "{\"text\":\"" + "a".repeat(50_000) + "\"}";
        IngressFixture.Answer bigAnswer = post(in, "/api/items", big);
        assertEquals(200, bigAnswer.status(), bigAnswer.body());
        assertEquals(big.length(), bigAnswer.json().getInteger("body_bytes"));
        // a rate limit counts per key: the third request of one client is refused, another client still passes
        assertEquals(200, get(in, "/limited", "X-Client: a").status());
        assertEquals(200, get(in, "/limited", "X-Client: a").status());
        IngressFixture.Answer limited = get(in, "/limited", "X-Client: a");
        assertEquals(429, limited.status(), limited.body());
        assertEquals("rate_limited", limited.json().getString("code"));
        assertEquals(200, get(in, "/limited", "X-Client: b").status());

        // the counters and the samples reach the node record; the samples carry no credentials
        JsonObject reported = Await.until("the WAF's counters reported", 20_000, () -> http.get(port, "/v1/nodes/" + edgeId, admin).bodyAsJsonObject(),
            n -> n.getJsonObject("ingress_stats") != null && n.getJsonObject("ingress_stats").getJsonObject(routeId) != null
                && n.getJsonObject("ingress_stats").getJsonObject(routeId).getJsonObject("waf") != null
                && n.getJsonObject("ingress_stats").getJsonObject(routeId).getJsonObject("waf").getLong("rate_limited") == 1);
        JsonObject w = reported.getJsonObject("ingress_stats").getJsonObject(routeId).getJsonObject("waf");
        assertEquals(3, w.getLong("denied"), w.encode());
        assertTrue(w.getLong("logged") >= 1, w.encode());
        assertEquals(1, w.getJsonObject("rules").getLong("no-admin"), w.encode());
        JsonArray samples = http.get(port, "/v1/waf/samples?team=" + TEAM + "&environment=prod", admin).bodyAsJsonObject().getJsonArray("samples");
        assertFalse(samples.isEmpty());
        String all = samples.encode();
        assertFalse(all.contains("sekrit") || all.contains("session=abc"), "samples are redacted: " + all);
        assertTrue(all.contains("no-admin"), all);

        // shadow: a stricter candidate denies nothing, and counts what it would have denied
        JsonObject strict = policy("shadow");
        strict.getJsonArray("rules").add(0, new JsonObject().put("id", "no-reports").put("expression", "request.path_normalized.startsWith('/reports')")
            .put("action", new JsonObject().put("type", "deny").put("status", 403)));
        long v2 = putPolicy(TEAM, strict);
        Await.until("the edge holding shadow version " + v2, 30_000, () -> http.get(port, "/v1/nodes/" + edgeId, admin).bodyAsJsonObject(),
            n -> Long.valueOf(v2).equals(n.getJsonObject("waf_sync").getLong("shadowing")) && "current".equals(n.getJsonObject("waf_sync").getString("state")));
        assertEquals(200, get(in, "/reports/q3").status());
        assertEquals(403, get(in, "/admin").status(), "the enforced version still decides");
        Await.until("would_deny counted", 20_000, () -> edge.ingress().counters().of(routeId).waf.wouldDeny >= 1);
        // the coordinator's gauges (sampled every 15 s): the node current, its probe passed, the decisions summed from its reports
        Await.until("the WAF gauges sampled", 40_000, () -> io.meshplane.testing.Metrics.value(http, port, "mesh_waf_nodes{sync=\"current\"}"),
            v -> v == 1.0);
        Await.until("the denials summed", 40_000, () -> io.meshplane.testing.Metrics.value(http, port, "mesh_waf_decisions{outcome=\"denied\"}"),
            v -> v >= 3.0);
        assertEquals(0.0, io.meshplane.testing.Metrics.value(http, port, "mesh_waf_probe_failing_nodes"));

        // another team's policy changes nothing here
        putPolicy("otherteam", new JsonObject().put("mode", "enforce").put("rules", new JsonArray().add(new JsonObject().put("id", "all")
            .put("expression", "true").put("action", new JsonObject().put("type", "deny").put("status", 403)))));
        assertEquals(200, get(in, "/search?q=union+station").status());
        assertNull(edge.ingress().waf().info().getString("error"));
      } finally {
        edge.close();
      }
    }
  }

  private static IngressFixture.Answer get(int in, String path, String... headers) throws IOException {
    String[] all = java.util.Arrays.copyOf(headers, headers.length + 1);
    all[headers.length] = "User-Agent: Mozilla/5.0 (X11; Linux x86_64)";
    try (IngressFixture.Raw c = new IngressFixture.Raw(in)) {
      return c.exchange("GET", path, HOST, all);
    }
  }

  /** A POST of a JSON body over a raw connection (the Host is the route's). */
  static IngressFixture.Answer post(int in, String path, String body) throws IOException {
    byte[] b = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    try (IngressFixture.Raw c = new IngressFixture.Raw(in)) {
      c.out.write(("POST " + path + " HTTP/1.1\r\nHost: " + HOST + "\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
      c.out.write(b);
      c.out.flush();
      return c.read();
    }
  }
}
