package io.meshplane.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A replica that loads the routes from a snapshot (it started after they were made) names them under a
 * version of its own ({@code v.<snapshot seq>}): an ingress node gets one full answer from it, the
 * same routes, and no replica ever sends it back to an older version.
 */
@Timeout(180)
class IngressRestartTest {
  static TestCluster cluster;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.of(2);
    cluster.start(0, Map.of("writebehind.flush_interval", "100ms"));
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, String version) {
    JsonObject body = version == null ? new JsonObject() : new JsonObject().put("ingress_routes", new JsonObject().put("version", version));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonObject("ingress_routes");
  }

  @Test
  void aReplicaLoadedFromASnapshotSendsTheSameRoutesOnceAndNoVersionGoesBack() {
    Meshplane first = cluster.replica(0);
    int port = first.coordinatorPort();
    Nodes.Enrolled edge = IngressRoutesTest.enrollVia(http, port, admin, "r-edge", "restart", "tag:edge");
    Nodes.Enrolled web = IngressRoutesTest.enrollVia(http, port, admin, "r-web", "restart", "tag:web");
    assertEquals(200, http.send(HttpMethod.PUT, port, "/v1/nodes/" + web.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray().add("web:8080"))).statusCode());
    assertEquals(200, http.send(HttpMethod.PUT, port, "/v1/acl?team=restart&environment=prod", admin,
        new JsonObject().put("grants", new JsonArray().add(IngressRoutesTest.grant("tag:edge", "tag:web", "tcp/8080")))).statusCode());
    JsonObject route = new JsonObject().put("team", "restart").put("environment", "prod").put("hostname", "r.example.com")
        .put("target", new JsonObject().put("node", web.id()).put("service", "web")).put("exposure", "public").put("tls", "acme")
        .put("ingress_tag", "tag:edge");
    assertEquals(201, http.send(HttpMethod.POST, port, "/v1/ingress/routes", admin, route).statusCode());
    JsonObject held = beat(first, edge, null);
    assertEquals("1", held.getString("version"));

    Meshplane second = cluster.start(1, Map.of("writebehind.flush_interval", "100ms"));
    JsonObject reloaded = beat(second, edge, "1");
    assertTrue(reloaded.getString("version").startsWith("1."), reloaded.encode());
    assertEquals(held.getJsonArray("routes"), reloaded.getJsonArray("routes"), "the same routes under the snapshot's version");
    // the first replica never sends the node back: its "1" is older than what the node holds
    assertEquals(new JsonObject().put("version", reloaded.getString("version")).put("unchanged", true),
        beat(first, edge, reloaded.getString("version")));
    // a change made on either replica reaches the node from both under one version
    assertEquals(201, http.send(HttpMethod.POST, second.coordinatorPort(), "/v1/ingress/routes", admin,
        route.copy().put("path_prefix", "/v2")).statusCode());
    cluster.awaitChangesApplied();
    JsonObject fromFirst = beat(first, edge, reloaded.getString("version"));
    JsonObject fromSecond = beat(second, edge, reloaded.getString("version"));
    assertEquals("2", fromFirst.getString("version"));
    assertEquals(fromFirst, fromSecond);
    assertEquals(2, fromFirst.getJsonArray("routes").size());
  }
}
