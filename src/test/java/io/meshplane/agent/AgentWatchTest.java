package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The watch stream end to end, against a real replica whose heartbeat interval is 60 s: after its first
 * heartbeat an agent beats again only 54-66 s later, so a change that reaches it within seconds can only
 * have come over its stream. A policy change and a re-tag bring new rules and peers at once; a re-key
 * asked on the stream completes at once (the agent sends the heartbeat with the result right away).
 */
@Timeout(90)
class AgentWatchTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  final List<NodeAgent> agents = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "60s"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "watch", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @AfterEach
  void closeAgents() {
    agents.forEach(NodeAgent::close);
  }

  NodeAgent agent(String name, String tag) {
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())), enrollToken,
        name, List.of(tag), dir.resolve(name), "127.0.0.1", 0, Backoff.standard(), true));
    agents.add(a);
    return a;
  }

  JsonObject info(NodeAgent a) {
    return http.get(a.listenPort(), "/info").bodyAsJsonObject();
  }

  JsonObject awaitInfo(NodeAgent a, String what, Predicate<JsonObject> condition) {
    return Await.until(what, 20_000, () -> info(a), condition);
  }

  /** Accepted heartbeats of an agent so far (its own metric). */
  long heartbeats(NodeAgent a) {
    String metrics = http.get(a.listenPort(), "/metrics").bodyAsString();
    return metrics.lines().filter(l -> l.startsWith("mesh_agent_heartbeats_total{outcome=\"ok\"} ")).mapToLong(l -> Long.parseLong(l.substring(l.lastIndexOf(' ') + 1)))
        .sum();
  }

  void putPolicy(JsonArray grants) {
    var put = http.send(http.request(HttpMethod.PUT, replica.coordinatorPort(), "/v1/acl?team=watch&environment=prod")
        .bearerTokenAuthentication(admin).putHeader("Content-Type", "application/json"), new JsonObject().put("grants", grants).encode().getBytes());
    assertEquals(200, put.statusCode(), put.bodyAsString());
  }

  static JsonObject grant(String src, String dst, String port) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray().add(port));
  }

  @Test
  void aPolicyChangeAndAReTagReachRunningAgentsOverTheirStreamsLongBeforeTheirNextHeartbeat() {
    NodeAgent web = agent("web-w", "tag:web");
    NodeAgent db = agent("db-w", "tag:db");
    awaitInfo(web, "web's stream", i -> i.getBoolean("ready") && "open".equals(i.getJsonObject("watch").getString("state")));
    JsonObject d0 = awaitInfo(db, "db's stream", i -> i.getBoolean("ready") && "open".equals(i.getJsonObject("watch").getString("state")));
    assertEquals(0, d0.getJsonObject("peers").getInteger("count"));
    assertEquals(1, heartbeats(db), "one heartbeat: the next is about 60 s away");

    putPolicy(new JsonArray().add(grant("tag:web", "tag:db", "tcp/5432")));
    JsonObject d = awaitInfo(db, "db's new rule and peer", i -> i.getJsonObject("acl").getInteger("rules") >= 1 && i.getJsonObject("peers").getInteger("count") == 1);
    awaitInfo(web, "web's new peer", i -> i.getJsonObject("peers").getInteger("count") == 1);
    assertTrue(db.verticle().session().aclRules().encode().contains("tcp/5432"), db.verticle().session().aclRules().encode());
    assertEquals(1, heartbeats(db), "no heartbeat in between: the stream brought it");
    assertEquals(1, heartbeats(web));

    // a re-tag of web out of the grant: db loses its peer and its rule, web its peer
    long aclBefore = d.getJsonObject("acl").getLong("version");
    String webId = info(web).getString("node_id");
    var retag = http.send(HttpMethod.PUT, replica.coordinatorPort(), "/v1/nodes/" + webId + "/tags", admin,
        new JsonObject().put("tags", new JsonArray().add("tag:other")));
    assertEquals(200, retag.statusCode(), retag.bodyAsString());
    awaitInfo(db, "db's peer and rule gone", i -> i.getJsonObject("peers").getInteger("count") == 0 && i.getJsonObject("acl").getLong("version") > aclBefore);
    awaitInfo(web, "web's peer gone", i -> i.getJsonObject("peers").getInteger("count") == 0);
    assertEquals(1, heartbeats(db), "still no heartbeat in between");
    String metrics = http.get(db.listenPort(), "/metrics").bodyAsString();
    assertTrue(metrics.matches("(?s).*mesh_agent_watch_messages_total\\{type=\"answer\"} ([3-9]|\\d\\d+)\n.*"),
        "the first answer and at least two changes: " + metrics.lines().filter(l -> l.contains("watch")).toList());
  }

  @Test
  void aReKeyArrivesOnTheStreamAndCompletesAtOnceNotAtTheNextHeartbeat() {
    NodeAgent node = agent("rekey-w", "tag:db");
    JsonObject i0 = awaitInfo(node, "the stream", i -> i.getBoolean("ready") && "open".equals(i.getJsonObject("watch").getString("state")));
    var asked = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + i0.getString("node_id") + "/rekey", admin, null);
    assertEquals(202, asked.statusCode(), asked.bodyAsString());
    String op = asked.bodyAsJsonObject().getString("id");
    JsonObject done = Await.until("the operation completes", 20_000,
        () -> http.get(replica.coordinatorPort(), "/v1/operations/" + op, admin).bodyAsJsonObject(), o -> !"pending".equals(o.getString("status"))
            && !"delivered".equals(o.getString("status")));
    assertEquals("succeeded", done.getString("status"), done.encode());
    assertEquals(node.verticle().session().publicKey(), done.getJsonObject("result").getString("new_key"));
    assertEquals(2, heartbeats(node), "the first heartbeat, and the one sent at once with the result");
  }
}
