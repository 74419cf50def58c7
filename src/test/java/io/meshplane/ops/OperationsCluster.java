package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Two replicas and PostgreSQL for the operations tests (each test class starts its own), with the test
 * speaking for the agents: enrolling, beating, calling the API and reading operations back.
 */
abstract class OperationsCluster {

  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static final Map<String, String> SETTINGS = Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms",
      "operations.deadline", "8s", "nodes.pending_ttl", "2s", "heartbeat.stale_after", "3s");
  static final String IGNORED = "mesh_ops_results_ignored_total";
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    // planned for three: the crash test starts a third replica and kills it
    cluster = TestCluster.of(3);
    a = cluster.start(0, SETTINGS);
    b = cluster.start(1, SETTINGS);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag)).put("region", "eu");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, JsonObject body) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static HttpResponse<Buffer> call(Meshplane via, HttpMethod method, String path, JsonObject body) {
    return http.send(method, via.coordinatorPort(), path, admin, body);
  }

  static JsonObject node(Nodes.Enrolled n) {
    return call(b, HttpMethod.GET, "/v1/nodes/" + n.id(), null).bodyAsJsonObject();
  }

  static JsonObject operation(String id) {
    HttpResponse<Buffer> r = call(b, HttpMethod.GET, "/v1/operations/" + id, null);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Reads the operation until {@code done} holds (20 s at most). */
  static JsonObject awaitOperation(String id, Predicate<JsonObject> done) {
    return Await.until("operation " + id + " reaches the awaited state", 20_000, () -> operation(id), done);
  }

  /** Beats until the answer carries a command (the board of the answering replica has learned of the operation). */
  static JsonObject beatUntilCommand(Meshplane via, Nodes.Enrolled n, JsonObject body, String opId) {
    return Await.until("a heartbeat answer carries " + opId, () -> beat(via, n, body), answer -> hasCommand(answer, opId));
  }

  /** Beats until the answer no longer carries the command (the answering replica's board has the completion). */
  static JsonObject beatUntilNoCommand(Meshplane via, Nodes.Enrolled n, JsonObject body, String opId) {
    return Await.until("no heartbeat answer carries " + opId, () -> beat(via, n, body), answer -> !hasCommand(answer, opId));
  }

  /** Waits until replica {@code m} has applied the change log up to {@code position} (its boards and models hold it). */
  static void awaitPosition(Meshplane m, long position) {
    Await.until("replica " + m.coordinatorPort() + " applied change " + position, () -> m.changes().position(), p -> p >= position);
  }

  static double metric(Meshplane m, String series) {
    return Metrics.value(http, m.coordinatorPort(), series);
  }

  static boolean hasCommand(JsonObject answer, String opId) {
    for (Object c : answer.getJsonArray("commands")) if (((JsonObject) c).getString("id").equals(opId)) return true;
    return false;
  }

  static JsonObject result(String opId, String status) {
    return new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", opId).put("status", status)
        .put("detail", "done by the test agent")));
  }

  static void grantAll(String team) {
    JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("*"))
        .put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*"))));
    HttpResponse<Buffer> r = call(a, HttpMethod.PUT, "/v1/acl?team=" + team + "&environment=prod", policy);
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
