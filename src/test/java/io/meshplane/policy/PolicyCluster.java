package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Two replicas and PostgreSQL for the policy API tests (each test class starts its own), and what they
 * share: policy documents and their paths, enrolling nodes, storing a policy, beating for a node.
 */
abstract class PolicyCluster {

  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"},"
      + "{\"name\":\"nyc1\",\"region\":\"us\",\"url\":\"https://nyc1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String acl(String team, String env) {
    return "/v1/acl?team=" + team + "&environment=" + env;
  }

  static JsonObject grant(String src, String dst, String... ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray(List.of(ports)));
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static HttpResponse<Buffer> put(Meshplane via, String team, JsonObject policy, String ifMatch) {
    var req = http.request(HttpMethod.PUT, via.coordinatorPort(), acl(team, "prod")).bearerTokenAuthentication(admin)
        .putHeader("Content-Type", "application/json");
    if (ifMatch != null) req.putHeader("If-Match", ifMatch);
    return http.send(req, policy.encode().getBytes());
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, long peers, long acl) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("known", new JsonObject().put("peers", peers).put("acl", acl)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static List<String> names(JsonArray a) {
    List<String> out = new ArrayList<>();
    for (Object o : a) out.add(((JsonObject) o).getString("name"));
    return out;
  }
}
