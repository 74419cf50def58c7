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
 * Peers and rules as agents receive them from a real replica: an ACL grant between two enrolled agents
 * gives each the other as a peer, later nodes arrive and leave as deltas, and the versions the agents
 * hold come back to the coordinator as {@code known} (the node record's {@code policy_sync}).
 */
@Timeout(90)
class AgentPeersTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  final List<NodeAgent> agents = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "peers", "prod", Surface.ENROLLMENT).jwt();
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
        name, List.of(tag), dir.resolve(name), "127.0.0.1", 0, Backoff.standard()));
    agents.add(a);
    return a;
  }

  JsonObject info(NodeAgent a) {
    return http.get(a.listenPort(), "/info").bodyAsJsonObject();
  }

  JsonObject awaitInfo(NodeAgent a, String what, Predicate<JsonObject> condition) {
    return Await.until(what, 20_000, () -> info(a), condition);
  }

  static int peers(JsonObject info) {
    return info.getJsonObject("peers").getInteger("count");
  }

  static long peersVersion(JsonObject info) {
    Long v = info.getJsonObject("peers").getLong("version");
    return v == null ? -1 : v;
  }

  @Test
  void aGrantBetweenTwoAgentsMakesThemPeersAndTheirKnownVersionsReachTheCoordinator() throws Exception {
    NodeAgent web = agent("web-a", "tag:web");
    NodeAgent db = agent("db-a", "tag:db");
    awaitInfo(web, "the first heartbeat", i -> i.getBoolean("ready"));
    awaitInfo(db, "the first heartbeat", i -> i.getBoolean("ready"));
    assertEquals(0, peers(info(web)), "no grant, no peers");

    JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:web"))
        .put("dst", new JsonArray().add("tag:db")).put("ports", new JsonArray().add("tcp/5432"))));
    var put = http.send(http.request(HttpMethod.PUT, replica.coordinatorPort(), "/v1/acl?team=peers&environment=prod")
        .bearerTokenAuthentication(admin).putHeader("Content-Type", "application/json"), policy.encode().getBytes());
    assertEquals(200, put.statusCode(), put.bodyAsString());

    JsonObject w = awaitInfo(web, "web's peer", i -> peers(i) == 1);
    JsonObject d = awaitInfo(db, "db's peer and its inbound rule", i -> peers(i) == 1 && i.getJsonObject("acl").getInteger("rules") >= 1);
    assertTrue(peersVersion(w) > 0 && peersVersion(d) > 0, w.encode() + d.encode());
    assertTrue(d.getJsonObject("acl").getLong("version") > 0, d.encode());
    JsonObject peerOfWeb = web.verticle().session().peers().entries().get(0);
    assertEquals(d.getString("node_id"), peerOfWeb.getString("id"));
    assertEquals(d.getString("public_key"), peerOfWeb.getString("public_key"), "the entry carries the peer's key");
    String rules = db.verticle().session().aclRules().encode();
    assertTrue(rules.contains(w.getString("address")) && rules.contains("tcp/5432"), "db keeps its inbound rule from web: " + rules);

    // the versions held travel back as `known`: the coordinator sees the node current
    String dbId = d.getString("node_id");
    JsonObject sync = awaitNode(dbId, n -> "current".equals(n.getJsonObject("policy_sync").getString("state"))
        && n.getJsonObject("policy_sync").getJsonObject("acknowledged").getLong("peers") != null
        && n.getJsonObject("policy_sync").getJsonObject("acknowledged").getLong("peers") > 0).getJsonObject("policy_sync");
    assertEquals(sync.getJsonObject("current").getLong("peers"), sync.getJsonObject("acknowledged").getLong("peers"), sync.encode());
    assertEquals(sync.getJsonObject("current").getLong("acl"), sync.getJsonObject("acknowledged").getLong("acl"), sync.encode());

    // a second web node arrives and leaves: db applies the changes to what it holds
    long before = peersVersion(info(db));
    NodeAgent web2 = agent("web-b", "tag:web");
    JsonObject w2 = awaitInfo(web2, "web-b's peer", i -> peers(i) == 1);
    JsonObject d2 = awaitInfo(db, "db's second peer", i -> peers(i) == 2);
    assertTrue(peersVersion(d2) > before, d2.encode());
    assertTrue(db.verticle().session().peers().contains(w2.getString("node_id")));
    assertEquals(204, http.send(HttpMethod.DELETE, replica.coordinatorPort(), "/v1/nodes/" + w2.getString("node_id"), admin, null).statusCode());
    awaitInfo(db, "db's peer removed", i -> peers(i) == 1);
    assertTrue(!db.verticle().session().peers().contains(w2.getString("node_id")));
    String metrics = http.get(replica.coordinatorPort(), "/metrics").bodyAsString();
    assertTrue(metrics.matches("(?s).*mesh_policy_peer_answers_total\\{kind=\"delta\"} [1-9].*"),
        "changes reached the agents as deltas: " + metrics.lines().filter(l -> l.contains("peer_answers")).toList());
  }

  JsonObject awaitNode(String id, Predicate<JsonObject> condition) {
    return Await.until("node " + id + " reaches the awaited state", 20_000,
        () -> http.get(replica.coordinatorPort(), "/v1/nodes/" + id, admin).bodyAsJsonObject(), condition);
  }
}
