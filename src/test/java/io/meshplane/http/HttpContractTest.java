package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.TestReplicas;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** SPEC §2 and §8 against one real replica: the error contract, request ids, probes and metrics. */
@Timeout(120)
class HttpContractTest {
  static TestDatabase db;
  static TestReplicas replicas;
  static Meshplane app;
  static Http http;
  static int api;
  static int panel;

  @BeforeAll
  static void start() {
    db = TestDatabase.create();
    replicas = new TestReplicas(1);
    app = replicas.start(0, db.url());
    api = app.coordinatorPort();
    panel = app.panelPort();
    http = new Http();
  }

  @AfterAll
  static void stop() {
    if (http != null) http.close();
    if (replicas != null) replicas.close();
    if (db != null) db.close();
  }

  static JsonObject problem(HttpResponse<Buffer> r, int status, String code) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
    assertEquals(Problems.MEDIA_TYPE, r.getHeader("Content-Type"));
    JsonObject body = r.bodyAsJsonObject();
    assertEquals(code, body.getString("code"));
    assertEquals(status, body.getInteger("status"));
    assertNotNull(body.getString("title"));
    assertNotNull(body.getString("detail"));
    assertEquals(r.getHeader("X-Request-Id"), body.getString("request_id"));
    assertNotNull(body.getJsonArray("errors"));
    assertFalse(r.bodyAsString().contains("Exception"), "no stack traces or exception names to clients");
    return body;
  }

  @Test
  void healthzAnswersOnBothComponents() {
    for (int port : new int[] {api, panel}) {
      HttpResponse<Buffer> r = http.get(port, "/healthz");
      assertEquals(200, r.statusCode());
      assertEquals(new JsonObject().put("status", "UP"), r.bodyAsJsonObject());
    }
  }

  @Test
  void readyzNamesEveryCheckAndIsUpWhenAllAre() {
    for (int port : new int[] {api, panel}) {
      HttpResponse<Buffer> r = http.get(port, "/readyz");
      assertEquals(200, r.statusCode(), r.bodyAsString());
      JsonObject checks = r.bodyAsJsonObject().getJsonObject("checks");
      for (String name : new String[] {"postgres", "cluster", "deployment"}) {
        assertEquals("UP", checks.getJsonObject(name).getString("status"), name);
      }
    }
  }

  @Test
  void metricsArePrometheusTextWithJvmHttpHazelcastAndMeshFamilies() {
    http.get(api, "/healthz");
    HttpResponse<Buffer> r = http.get(api, "/metrics");
    assertEquals(200, r.statusCode());
    assertTrue(r.getHeader("Content-Type").startsWith("text/plain"), r.getHeader("Content-Type"));
    String text = r.bodyAsString();
    for (String family : new String[] {
        "# TYPE mesh_node_heartbeats_total counter", "mesh_node_count{status=\"online\"}", "mesh_node_count{status=\"stale\"}",
        "mesh_node_count{status=\"pending\"}", "# TYPE mesh_node_stale_transitions_total counter",
        "jvm_memory_used_bytes", "vertx_http_server_requests_total", "hazelcast_cluster_members 1.0",
        "hazelcast_partitions_owned 271.0"}) {
      assertTrue(text.contains(family), "missing " + family);
    }
  }

  @Test
  void aSaneClientRequestIdIsEchoedAndAnInsaneOneReplaced() {
    HttpResponse<Buffer> mine = http.send(http.request(HttpMethod.GET, api, "/healthz").putHeader("X-Request-Id", "trace-42.a:b"));
    assertEquals("trace-42.a:b", mine.getHeader("X-Request-Id"));
    HttpResponse<Buffer> weird = http.send(http.request(HttpMethod.GET, api, "/healthz").putHeader("X-Request-Id", "a b<script>"));
    assertTrue(weird.getHeader("X-Request-Id").matches("[0-9a-f]{32}"), weird.getHeader("X-Request-Id"));
    HttpResponse<Buffer> none = http.get(api, "/healthz");
    assertTrue(none.getHeader("X-Request-Id").matches("[0-9a-f]{32}"));
    assertFalse(none.getHeader("X-Request-Id").equals(http.get(api, "/healthz").getHeader("X-Request-Id")));
  }

  @Test
  void anUnknownRouteIsAProblem404OnBothComponents() {
    problem(http.get(api, "/v1/no-such-thing"), 404, "not_found");
    problem(http.get(panel, "/api/v1/no-such-thing"), 404, "not_found");
    problem(http.get(api, "/"), 404, "not_found");
  }

  @Test
  void aWrongMethodIsAProblem405() {
    problem(http.send(HttpMethod.DELETE, api, "/healthz", null, null), 405, "method_not_allowed");
    problem(http.send(HttpMethod.POST, api, "/metrics", null, null), 405, "method_not_allowed");
  }

  @Test
  void anOversizedBodyIsAProblem413() {
    JsonObject big = new JsonObject().put("pad", "x".repeat(Routers.BODY_LIMIT));
    problem(http.send(HttpMethod.POST, api, "/v1/nodes", null, big), 413, "payload_too_large");
    // the server keeps serving afterwards
    assertEquals(200, http.get(api, "/healthz").statusCode());
  }

  @Test
  void aBodyThatIsNotJsonIsAProblem415() {
    problem(http.sendRaw(HttpMethod.POST, api, "/v1/nodes", "text/plain", Buffer.buffer("name=x")), 415, "unsupported_media_type");
    problem(http.sendRaw(HttpMethod.POST, api, "/v1/nodes", null, Buffer.buffer("{}")), 415, "unsupported_media_type");
    problem(http.sendRaw(HttpMethod.PUT, api, "/v1/acl", "application/x-www-form-urlencoded", Buffer.buffer("a=b")), 415, "unsupported_media_type");
  }

  @Test
  void malformedJsonIsAProblem400() {
    problem(http.sendRaw(HttpMethod.POST, api, "/v1/nodes", "application/json", Buffer.buffer("{\"name\": ")), 400, "invalid_request");
    problem(http.sendRaw(HttpMethod.POST, api, "/v1/nodes", "application/json", Buffer.buffer("[1,2]")), 400, "invalid_request");
    problem(http.sendRaw(HttpMethod.POST, api, "/v1/nodes", "application/json", Buffer.buffer("\u0000\u0001")), 400, "invalid_request");
  }
}
