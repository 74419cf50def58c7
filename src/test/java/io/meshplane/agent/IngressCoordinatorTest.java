package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's ingress edge against a real coordinator (PostgreSQL, the ingress routes API): a route
 * created through {@code /v1/ingress/routes} reaches the edge agent in its heartbeat answers, a request
 * through the agent's ingress listener reaches the target (a local server standing in for the web node,
 * its bound service port the server's), and the agent's report is taken: the node shows
 * {@code ingress_sync} current and the route's counters in {@code ingress_stats}.
 */
@Timeout(120)
class IngressCoordinatorTest {
  static TestCluster cluster;
  static Http http;
  static int port;
  static String admin;
  static String enrollToken;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "writebehind.flush_interval", "100ms"));
    http = cluster.http();
    port = cluster.replica(0).coordinatorPort();
    admin = cluster.admin();
    enrollToken = Tokens.issue(cluster.replica(0), "edgee2e", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  private static HttpResponse<Buffer> send(HttpMethod m, String path, JsonObject body) {
    return http.send(m, port, path, admin, body);
  }

  @Test
  void aRouteMadeThroughTheApiIsServedByTheEdgeAgentAndItsReportTaken() throws Exception {
    try (IngressFixture.Target target = new IngressFixture.Target("web")) {
      JsonObject enrolled = send(HttpMethod.POST, "/v1/nodes", new JsonObject().put("name", "e2e-web").put("public_key", io.meshplane.testing.Nodes.key())
          .put("team", "edgee2e").put("environment", "prod").put("tags", new JsonArray().add("tag:web"))).bodyAsJsonObject();
      String webId = enrolled.getJsonObject("node").getString("id");
      String webAddress = enrolled.getJsonObject("node").getString("address").replaceAll("/.*", "");
      assertEquals(200, send(HttpMethod.PUT, "/v1/nodes/" + webId + "/services",
          new JsonObject().put("services", new JsonArray().add("web:" + target.port()))).statusCode());
      JsonObject grant = new JsonObject().put("src", new JsonArray().add("tag:edge")).put("dst", new JsonArray().add("tag:web"))
          .put("ports", new JsonArray().add("tcp/" + target.port()));
      HttpResponse<Buffer> acl = send(HttpMethod.PUT, "/v1/acl?team=edgee2e&environment=prod", new JsonObject().put("grants", new JsonArray().add(grant)));
      assertEquals(200, acl.statusCode(), acl.bodyAsString());

      NodeAgent edge = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + port)), enrollToken, "e2e-edge",
          List.of("tag:edge"), dir.resolve("edge"), "127.0.0.1", 0, Backoff.standard(), true)
          .withIngress(new IngressEdge.Settings("127.0.0.1", 0).withOverrides(Map.of(webAddress, "127.0.0.1"))));
      try {
        String edgeId = AgentBehaviourTest.nodeId(edge);
        HttpResponse<Buffer> created = send(HttpMethod.POST, "/v1/ingress/routes", new JsonObject().put("team", "edgee2e").put("environment", "prod")
            .put("hostname", "app.e2e.example.com").put("path_prefix", "/").put("target", new JsonObject().put("node", webId).put("service", "web"))
            .put("exposure", "public").put("tls", "meshca").put("ingress_tag", "tag:edge"));
        assertEquals(201, created.statusCode(), created.bodyAsString());
        String routeId = created.bodyAsJsonObject().getString("id");
        Await.until("the route at the edge agent", 20_000, () -> edge.ingress().table().routes().size() == 1);
        assertEquals(webAddress, edge.ingress().table().routes().get(0).target().address());
        String version = edge.ingress().table().version();
        org.junit.jupiter.api.Assertions.assertTrue(edge.verticle().session().watchPath().endsWith("&ingress=" + version),
            "a stream opened from now on asks with the routes version applied: " + edge.verticle().session().watchPath());
        // that stream request, as the agent would send it, is taken
        Http.Head head = http.head(port, "/v1" + edge.verticle().session().watchPath(), edge.verticle().session().authorization().substring(7));
        assertEquals(200, head.status(), head.body());
        try (IngressFixture.Raw c = new IngressFixture.Raw(edge.ingress().plainPort())) {
          IngressFixture.Answer a = c.exchange("GET", "/hello", "app.e2e.example.com");
          assertEquals(200, a.status(), a.body());
          assertEquals("web", a.json().getString("server"));
          assertEquals(404, c.exchange("GET", "/hello", "nothing.e2e.example.com").status());
        }
        JsonObject node = Await.until("the edge's report taken", 20_000, () -> http.get(port, "/v1/nodes/" + edgeId, admin).bodyAsJsonObject(),
            n -> n.getJsonObject("ingress_sync") != null && "current".equals(n.getJsonObject("ingress_sync").getString("state"))
                && n.getValue("ingress_stats") instanceof JsonObject s && s.getJsonObject(routeId) != null
                && s.getJsonObject(routeId).getLong("requests", 0L) >= 1);
        // the watch stream, reopened by now or not, asks with the version applied: never refused
        Await.until("the stream open", 20_000, () -> "open".equals(http.get(edge.listenPort(), "/info").bodyAsJsonObject().getJsonObject("watch").getString("state")));
        assertEquals(1, node.getJsonObject("ingress_stats").getJsonObject(routeId).getJsonObject("status_classes").getLong("2xx"), node.encode());
      } finally {
        edge.close();
      }
    }
  }
}
