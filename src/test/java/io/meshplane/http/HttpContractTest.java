package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.RawHttp;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** API.md §1 and §15 against one real replica: the error contract, request ids, probes and metrics. */
@Timeout(120)
class HttpContractTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int api;
  static int panel;

  static LogCapture logs;

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    api = app.coordinatorPort();
    panel = app.panelPort();
    http = cluster.http();
  }

  @AfterAll
  static void stop() {
    if (logs != null) logs.close();
    if (cluster != null) cluster.close();
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
        "# TYPE mesh_node_heartbeats_total counter", "mesh_nodes{status=\"online\"}", "mesh_nodes{status=\"stale\"}",
        "mesh_nodes{status=\"pending\"}", "# TYPE mesh_node_stale_transitions_total counter",
        "# TYPE mesh_writebehind_quarantined_total counter", "process_cpu_seconds_total",
        "# TYPE mesh_watch_streams gauge", "# TYPE mesh_watch_opened_total counter", "mesh_watch_closed_total{reason=\"slow_reader\"}", "# TYPE mesh_watch_delay_seconds histogram",
        "mesh_meshca_node_certificates{state=\"expired\"}", "# TYPE mesh_meshca_authority_expiry_seconds gauge",
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

  @Test
  void aBodyCarriedAsMultipartOrFormIs415AndNeverDecoded() {
    String multipart = "--XX\r\nContent-Disposition: form-data; name=\"endpoints\"\r\n\r\n1.2.3.4:5\r\n--XX--\r\n";
    for (String path : new String[] {"/v1/nodes", "/v1/nodes/nd_01m8000000000000000000000a/heartbeat"}) {
      problem(http.sendRaw(HttpMethod.POST, api, path, "multipart/form-data; boundary=XX", Buffer.buffer(multipart)), 415,
          "unsupported_media_type");
      problem(http.sendRaw(HttpMethod.POST, api, path, "application/x-www-form-urlencoded", Buffer.buffer("a=b")), 415,
          "unsupported_media_type");
      problem(http.sendRaw(HttpMethod.POST, api, path, "application/merge-patch+json", Buffer.buffer("{}")), 415,
          "unsupported_media_type");
      problem(http.sendRaw(HttpMethod.POST, api, path, "application/json; charset=utf-16", Buffer.buffer("{}")), 415,
          "unsupported_media_type");
    }
  }

  @Test
  void aMalformedRequestTargetIs400NamingThePartAndLogsNoError() {
    logs.clear();
    for (String path : new String[] {"/%zz", "/v1/nodes/%zz", "/healthz%zz", "/v1/nodes/%00", "/v1/%C0%AF"}) {
      JsonObject p = problem(http.get(api, path), 400, "invalid_request");
      assertEquals(RequestTarget.PATH, p.getJsonArray("errors").getJsonObject(0).getString("field"), path);
    }
    for (String[] c : new String[][] {{"limit=%zz", "limit"}, {"limit=1;cursor=x", "limit"}, {"limit=1&limit=2", "limit"},
        {"tag=a%0Ab", "tag"}}) {
      JsonObject p = problem(http.get(api, "/v1/nodes?" + c[0]), 400, "invalid_request");
      assertEquals(c[1], p.getJsonArray("errors").getJsonObject(0).getString("field"), c[0]);
    }
    assertEquals(List.of(), logs.problems());
    assertEquals(200, http.get(api, "/healthz").statusCode());
  }

  @Test
  void transportEdgesAreAnsweredAsProblemsWithoutStackTraces() throws Exception {
    logs.clear();
    RawHttp.Answer longUri = RawHttp.exchange(api, RawHttp.ascii("GET /" + "a".repeat(9000) + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    rawProblem(longUri, 414, "uri_too_long");
    RawHttp.Answer bigHeader = RawHttp.exchange(api,
        RawHttp.ascii("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n"));
    rawProblem(bigHeader, 431, "request_header_fields_too_large");
    rawProblem(RawHttp.exchange(api, RawHttp.ascii("GARBAGE\r\n\r\n")), 400, "invalid_request");
    RawHttp.Answer badChunk = RawHttp.exchange(api, RawHttp.ascii("POST /v1/nodes HTTP/1.1\r\nHost: x\r\n"
        + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"));
    rawProblem(badChunk, 400, "invalid_request");
    RawHttp.Answer noHost = RawHttp.exchange(api, RawHttp.ascii("GET /healthz HTTP/1.1\r\n\r\n"));
    rawProblem(noHost, 400, "invalid_request");
    assertEquals(List.of(), logs.problems(), "one log line each, no stack trace");
    assertEquals(200, http.get(api, "/healthz").statusCode(), "the server keeps serving");
  }

  private static void rawProblem(RawHttp.Answer a, int status, String code) {
    assertNotNull(a, "an answer, not a silent close");
    assertEquals(status, a.status(), a.head());
    assertEquals(Problems.MEDIA_TYPE, a.header("content-type"), a.head());
    JsonObject body = new JsonObject(a.body());
    assertEquals(code, body.getString("code"));
    assertEquals(status, body.getInteger("status"));
    assertNotNull(body.getString("request_id"));
  }

  @Test
  void theOpenApiDocumentIsServedWithoutAToken() {
    HttpResponse<Buffer> r = http.get(api, "/v1/openapi.yaml");
    assertEquals(200, r.statusCode());
    assertEquals("application/yaml", r.getHeader("Content-Type"));
    assertTrue(r.bodyAsString().startsWith("openapi: 3."), r.bodyAsString().substring(0, 40));
  }

  @Test
  void theMetricsOfBothComponentsPassPromtool() throws Exception {
    http.get(api, "/healthz");
    for (int port : new int[] {api, panel}) {
      String text = http.get(port, "/metrics").bodyAsString();
      Process p;
      try {
        p = new ProcessBuilder("promtool", "check", "metrics").redirectErrorStream(true).start();
      } catch (java.io.IOException e) {
        throw new AssertionError("promtool is needed (Debian package prometheus; .ci/run installs it)", e);
      }
      p.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
      assertEquals("", out.trim(), "promtool findings on port " + port);
      assertEquals(0, p.exitValue(), out);
    }
  }
}
