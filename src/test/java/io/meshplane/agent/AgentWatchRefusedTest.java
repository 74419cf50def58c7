package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An agent whose stream the replica refuses (the node already holds two streams: 409 too_many_streams)
 * lives on heartbeat answers as before: a policy change reaches it at its next heartbeat (1 s here), and
 * its stream attempts back off.
 */
@Timeout(60)
class AgentWatchRefusedTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "refused", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  NodeAgent agent(Path state) {
    return NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())), enrollToken,
        "db-r", List.of("tag:db"), state, "127.0.0.1", 0, Backoff.standard(), true));
  }

  static long metric(String metrics, String line) {
    return metrics.lines().filter(l -> l.startsWith(line + " ")).mapToLong(l -> Long.parseLong(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  @Test
  void anAgentWhoseStreamIsRefusedStillGetsChangesFromHeartbeatAnswers() throws Exception {
    Path state = dir.resolve("db");
    NodeAgent first = agent(state);
    String id;
    try {
      JsonObject i = Await.until("enrolled and beating", 20_000, () -> http.get(first.listenPort(), "/info").bodyAsJsonObject(), j -> j.getBoolean("ready"));
      id = i.getString("node_id");
    } finally {
      first.close();
    }
    String token = new JsonObject(Files.readString(state.resolve("credential.json"))).getString("token");

    // two streams of this node held elsewhere (by the test, with the node's own credential)
    Vertx vertx = Vertx.vertx();
    try {
      HttpClient client = vertx.createHttpClient();
      for (int k = 0; k < 2; k++) {
        HttpClientResponse r = client.request(new RequestOptions().setMethod(HttpMethod.GET).setHost("127.0.0.1").setPort(replica.coordinatorPort())
                .setURI("/v1/nodes/" + id + "/watch?peers=0&acl=0").putHeader("Authorization", "Bearer " + token))
            .compose(req -> req.send()).await(10, TimeUnit.SECONDS);
        assertEquals(200, r.statusCode(), "stream " + k);
        r.handler(b -> {}); // read and drop what comes
      }

      NodeAgent agent = agent(state);
      try {
        Await.until("the agent's stream refused", 20_000, () -> metric(http.get(agent.listenPort(), "/metrics").bodyAsString(),
            "mesh_agent_watch_connects_total{outcome=\"refused\"}") >= 1);
        long aclBefore = agent.verticle().session().aclVersion();
        JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("10.20.0.0/16"))
            .put("dst", new JsonArray().add("tag:db")).put("ports", new JsonArray().add("tcp/22"))));
        var put = http.send(http.request(HttpMethod.PUT, replica.coordinatorPort(), "/v1/acl?team=refused&environment=prod")
            .bearerTokenAuthentication(admin).putHeader("Content-Type", "application/json"), policy.encode().getBytes());
        assertEquals(200, put.statusCode(), put.bodyAsString());
        JsonObject info = Await.until("the new rule from a heartbeat answer", 20_000, () -> http.get(agent.listenPort(), "/info").bodyAsJsonObject(),
            j -> j.getJsonObject("acl").getLong("version") != null && j.getJsonObject("acl").getLong("version") > aclBefore
                && j.getJsonObject("acl").getInteger("rules") >= 1);
        String metrics = http.get(agent.listenPort(), "/metrics").bodyAsString();
        assertEquals(0, metric(metrics, "mesh_agent_watch_connects_total{outcome=\"opened\"}"), "never had a stream");
        assertEquals(0, metric(metrics, "mesh_agent_watch_open"));
        assertTrue(agent.verticle().session().aclRules().encode().contains("10.20.0.0/16"), info.encode());
        assertTrue(metric(metrics, "mesh_agent_watch_connects_total{outcome=\"refused\"}") <= 5, "attempts back off (1 s, 2 s, 4 s, ...): " + metrics);
      } finally {
        agent.close();
      }
    } finally {
      vertx.close().await(5, TimeUnit.SECONDS);
    }
  }
}
