package io.meshplane.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
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
 * On two replicas, the ingress gauges are sampled by the oldest member only from the ingress nodes' live
 * entries: an edge node behind its routes version shows as behind with a growing config lag, then, once
 * its report acknowledges the version with a certificate's {@code not_after} and an {@code acme_error},
 * as current, with the certificate's time to expiry and one failing ACME route; the other replica
 * reports 0, no expiry and takes no sample. A report's bad {@code not_after} or {@code acme_error} is a
 * 400 naming the field.
 */
@Timeout(180)
class IngressGaugesTest {
  static TestCluster cluster;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("metrics.gauge_interval", "1s"));
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  private static HttpResponse<Buffer> beat(int port, Nodes.Enrolled n, JsonObject body) {
    return http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
  }

  private static JsonObject stats(Object notAfter, Object acmeError) {
    JsonObject s = new JsonObject().put("requests", 1).put("errors", 0).put("active", 0).put("bytes_in", 0).put("bytes_out", 10).putNull("serial")
        .put("status_classes", new JsonObject().put("2xx", 1).put("3xx", 0).put("4xx", 0).put("5xx", 0));
    s.put("not_after", notAfter);
    s.put("acme_error", acmeError);
    s.put("meshca_error", acmeError == null ? null : "MeshCA: " + acmeError);
    return s;
  }

  @Test
  void theOldestReplicaSamplesIngressNodesSyncLagExpiryAndAcmeFailures() throws Exception {
    Meshplane oldest = cluster.replica(0);
    Meshplane other = cluster.replica(1);
    int port = oldest.coordinatorPort();
    Nodes.Enrolled edge = IngressRoutesTest.enrollVia(http, port, admin, "gauge-edge", "gauges", "tag:edge");
    Nodes.Enrolled web = IngressRoutesTest.enrollVia(http, port, admin, "gauge-web", "gauges", "tag:web");
    assertEquals(200, http.send(HttpMethod.PUT, port, "/v1/nodes/" + web.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray().add("web:8080"))).statusCode());
    HttpResponse<Buffer> acl = http.send(HttpMethod.PUT, port, "/v1/acl?team=gauges&environment=prod", admin,
        new JsonObject().put("grants", new JsonArray().add(IngressRoutesTest.grant("tag:edge", "tag:web", "tcp/8080"))));
    assertEquals(200, acl.statusCode(), acl.bodyAsString());
    JsonObject route = new JsonObject().put("team", "gauges").put("environment", "prod").put("hostname", "gauged.example.com")
        .put("path_prefix", "/").put("target", new JsonObject().put("node", web.id()).put("service", "web")).put("exposure", "public")
        .put("tls", "acme").put("ingress_tag", "tag:edge");
    HttpResponse<Buffer> created = http.send(HttpMethod.POST, port, "/v1/ingress/routes", admin, route);
    assertEquals(201, created.statusCode(), created.bodyAsString());
    String id = created.bodyAsJsonObject().getString("id");

    // online and never acknowledging: behind, its lag growing from the route's creation
    HttpResponse<Buffer> first = beat(port, edge, new JsonObject());
    assertEquals(200, first.statusCode(), first.bodyAsString());
    String version = first.bodyAsJsonObject().getJsonObject("ingress_routes").getString("version");
    Await.until("the oldest replica counts the edge node behind", 40_000,
        () -> Metrics.value(http, port, "mesh_ingress_nodes{sync=\"behind\"}"), v -> v == 1.0);
    Await.until("the config lag grows", 20_000, () -> Metrics.value(http, port, "mesh_ingress_config_lag_seconds"), v -> v >= 1.0);

    // hostile reports: 400 naming the field, nothing kept
    for (Object[] bad : new Object[][] {{-1, null, "not_after"}, {"soon", null, "not_after"}, {253_402_300_800L, null, "not_after"},
        {null, "line\nbreak", "acme_error"}, {null, "x".repeat(201), "acme_error"}, {null, 7, "acme_error"}, {null, " ", "acme_error"}}) {
      JsonObject report = new JsonObject().put("version", version).put("routes", new JsonObject().put(id, stats(bad[0], bad[1])));
      HttpResponse<Buffer> r = beat(port, edge, new JsonObject().put("ingress_routes", report));
      assertEquals(400, r.statusCode(), r.bodyAsString());
      assertEquals("ingress_routes.routes." + id + "." + bad[2], r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"),
          r.bodyAsString());
    }

    JsonObject badMeshca = stats(null, null).put("meshca_error", "bell\u0007");
    HttpResponse<Buffer> rm = beat(port, edge, new JsonObject().put("ingress_routes",
        new JsonObject().put("version", version).put("routes", new JsonObject().put(id, badMeshca))));
    assertEquals(400, rm.statusCode(), rm.bodyAsString());
    assertEquals("ingress_routes.routes." + id + ".meshca_error", rm.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));

    // acknowledged, with a certificate expiring in 5 days and the last renewal failed
    long notAfter = System.currentTimeMillis() / 1000 + 5 * 86_400;
    JsonObject report = new JsonObject().put("version", version)
        .put("routes", new JsonObject().put(id, stats(notAfter, "urn:ietf:params:acme:error:connection: no answer on port 80")));
    HttpResponse<Buffer> ok = beat(port, edge, new JsonObject().put("ingress_routes", report));
    assertEquals(200, ok.statusCode(), ok.bodyAsString());
    JsonObject kept = http.get(port, "/v1/nodes/" + edge.id(), admin).bodyAsJsonObject().getJsonObject("ingress_stats").getJsonObject(id);
    assertEquals(notAfter, kept.getLong("not_after"));
    assertTrue(kept.getString("acme_error").contains("no answer on port 80"), kept.encode());
    assertTrue(kept.getString("meshca_error").startsWith("MeshCA: "), kept.encode());

    Await.until("the oldest replica counts the edge node current", 40_000,
        () -> Metrics.value(http, port, "mesh_ingress_nodes{sync=\"current\"}"), v -> v == 1.0);
    assertEquals(0.0, Metrics.value(http, port, "mesh_ingress_nodes{sync=\"behind\"}"));
    assertEquals(0.0, Metrics.value(http, port, "mesh_ingress_config_lag_seconds"));
    assertEquals(1.0, Metrics.value(http, port, "mesh_ingress_acme_failing_routes"));
    assertEquals(1.0, Metrics.value(http, port, "mesh_ingress_meshca_failing_routes"));
    double expiry = Metrics.value(http, port, "mesh_ingress_certificate_expiry_seconds");
    assertTrue(expiry > 5 * 86_400 - 120 && expiry <= 5 * 86_400, "expiry " + expiry);

    // the other replica: its sampler runs, takes no sample and reports 0 and no expiry
    long ticks = other.ingress().gauges().ticks();
    Await.until("the other replica's sampler ran twice more", 40_000, () -> other.ingress().gauges().ticks(), t -> t >= ticks + 2);
    assertEquals(0, other.ingress().gauges().samples(), "no sample on a replica that is not the oldest");
    assertEquals(0.0, Metrics.value(http, other.coordinatorPort(), "mesh_ingress_nodes{sync=\"current\"}"));
    assertEquals(0.0, Metrics.value(http, other.coordinatorPort(), "mesh_ingress_acme_failing_routes"));
    String body = http.get(other.coordinatorPort(), "/metrics").bodyAsString();
    assertFalse(body.lines().anyMatch(l -> l.startsWith("mesh_ingress_certificate_expiry_seconds ")), body);
  }
}
