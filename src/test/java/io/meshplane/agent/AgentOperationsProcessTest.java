package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every node operation end to end with the reference agent as its own process (API.md §9, §11): services,
 * a re-key that its peer sees, a relay move, an ingress assigned and drained. The coordinator marks
 * each succeeded only from the agent's result and the effect in its heartbeat.
 */
@Timeout(180)
class AgentOperationsProcessTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "relays", RELAYS, "writebehind.flush_interval", "100ms"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  HttpResponse<Buffer> call(HttpMethod method, String path, JsonObject body) {
    return http.send(method, replica.coordinatorPort(), path, admin, body);
  }

  JsonObject node(String id) {
    return call(HttpMethod.GET, "/v1/nodes/" + id, null).bodyAsJsonObject();
  }

  JsonObject awaitSucceeded(HttpResponse<Buffer> accepted) throws InterruptedException {
    assertEquals(202, accepted.statusCode(), accepted.bodyAsString());
    String id = accepted.bodyAsJsonObject().getString("id");
    JsonObject op = Await.until("operation " + id + " completes", 30_000,
        () -> call(HttpMethod.GET, "/v1/operations/" + id, null).bodyAsJsonObject(), o -> o.getString("completed_at") != null);
    assertEquals("succeeded", op.getString("status"), op.encode());
    return op;
  }

  @Test
  void theReferenceAgentCarriesOutEveryOperation() throws Exception {
    // a policy that makes every node of the team a peer of every other, and a peer spoken for by the test
    JsonObject all = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("*"))
        .put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*"))));
    assertEquals(200, call(HttpMethod.PUT, "/v1/acl?team=ops&environment=prod", all).statusCode());
    Nodes.Enrolled peer = Nodes.enroll(http, replica.coordinatorPort(), admin, "peer-1", "ops", "prod");
    String enroll = Tokens.issue(replica, "ops", "prod", Surface.ENROLLMENT).jwt();

    Path log = dir.resolve("agent.log");
    Process agent = ChildJvm.launch(dir, Map.of(), log, null, "agent", "--coordinator", "http://127.0.0.1:" + replica.coordinatorPort(),
        "--enroll-token", enroll, "--name", "edge-1", "--tags", "tag:edge", "--state-dir", dir.resolve("state").toString(),
        "--listen", "127.0.0.1:0");
    try {
      int port = Integer.parseInt(awaitLog(log, "agent listening on 127\\.0\\.0\\.1:(\\d+)"));
      awaitLog(log, "first heartbeat accepted by ()");
      JsonObject info = http.get(port, "/info").bodyAsJsonObject();
      String id = info.getString("node_id");
      String firstKey = info.getString("public_key");

      // services: bound, sent, reported back by the agent
      assertEquals(200, call(HttpMethod.PUT, "/v1/nodes/" + id + "/services", new JsonObject().put("services",
          new JsonArray().add("ssh:22").add("web:8080"))).statusCode());
      Await.until("services confirmed", 30_000, () -> node(id).getJsonObject("policy_sync"), s -> "current".equals(s.getString("services")));

      // re-key: a new key in the inventory, in the agent, and in its peer's view
      JsonObject rekey = awaitSucceeded(call(HttpMethod.POST, "/v1/nodes/" + id + "/rekey", null));
      String newKey = rekey.getJsonObject("result").getString("new_key");
      assertNotEquals(firstKey, newKey);
      Await.until("the inventory shows the new key", 30_000, () -> node(id).getString("public_key"), newKey::equals);
      assertEquals(newKey, http.get(port, "/info").bodyAsJsonObject().getString("public_key"));
      Await.until("the peer is told the new key", 30_000, () -> peerKeySeenBy(peer, id), newKey::equals);

      // relay move: moving, then connected on the new relay
      String from = node(id).getString("relay");
      String to = from.equals("fra1") ? "ams1" : "fra1";
      HttpResponse<Buffer> move = call(HttpMethod.PUT, "/v1/nodes/" + id + "/relay", new JsonObject().put("relay", to));
      awaitSucceeded(move);
      JsonObject moved = Await.until("relay confirmed", 30_000, () -> node(id), n -> "connected".equals(n.getString("relay_status")));
      assertEquals(to, moved.getString("relay"));
      assertEquals(to, http.get(port, "/info").bodyAsJsonObject().getString("relay"));

      // ingress: delivered, then drained
      assertEquals(201, call(HttpMethod.POST, "/v1/nodes/" + id + "/ingress", new JsonObject().put("name", "web")
          .put("hostname", "web.example.net").put("port", 443)).statusCode());
      Await.until("the agent holds the ingress", 30_000, () -> http.get(port, "/info").bodyAsJsonObject().getJsonArray("ingress"), a -> a.size() == 1);
      awaitSucceeded(call(HttpMethod.POST, "/v1/nodes/" + id + "/ingress/web/drain", null));
      assertEquals("drained", node(id).getJsonArray("ingress").getJsonObject(0).getString("state"));
      JsonObject ops = call(HttpMethod.GET, "/v1/nodes/" + id + "/operations?status=succeeded", null).bodyAsJsonObject();
      assertEquals(3, ops.getJsonArray("items").size(), ops.encode());
      String metrics = http.get(port, "/metrics").bodyAsString();
      assertTrue(metrics.contains("mesh_agent_commands_total{kind=\"rekey\",status=\"succeeded\"} 1"), metrics);
    } finally {
      agent.destroy();
      assertTrue(agent.waitFor(15, TimeUnit.SECONDS));
    }
  }

  /** The key of {@code nodeId} in a full peers answer to {@code peer}. */
  String peerKeySeenBy(Nodes.Enrolled peer, String nodeId) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + peer.id() + "/heartbeat", peer.token(),
        new JsonObject());
    for (Object o : r.bodyAsJsonObject().getJsonObject("peers").getJsonArray("items", new JsonArray())) {
      if (((JsonObject) o).getString("id").equals(nodeId)) return ((JsonObject) o).getString("public_key");
    }
    return null;
  }

  static String awaitLog(Path log, String regex) {
    return Await.inLog(log, regex, null, 60_000);
  }
}
