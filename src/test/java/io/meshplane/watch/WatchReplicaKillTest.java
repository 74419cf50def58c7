package io.meshplane.watch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The "reconnect after a replica is killed, with no change missed" (API.md §11, "The watch
 * stream"; ARCHITECTURE.md, "The watch stream"): two replica JVMs, ten agents streaming from replica 2
 * (three of them with both of their places there), replica 2 SIGKILLed, the policy and a node's
 * endpoints changed on replica 1 while the streams are down, then every agent reconnects to replica 1
 * with the versions it held. Its first answer must bring it exactly to what a full heartbeat answer of
 * replica 1 says (versions, rules, peers as sets), and the killed replica's claims must not keep a node
 * from its two places on the survivor.
 */
class WatchReplicaKillTest {
  private static final int NODES = 10;
  /** Nodes 0..2 hold both of their places on the replica that is killed. */
  private static final int DOUBLE = 3;
  private static final String TEAM = "kill";

  private final Http http = new Http();
  private final Vertx vertx = Vertx.vertx();
  private final List<WatchClient> open = new ArrayList<>();
  private ReplicaJvms replicas;
  private String admin;
  /** 409s answered to reconnections while the survivor still counted the dead member's claims. */
  private int refusedWhileDeadCounted;

  /** An agent as API.md §11 "Applying an answer" describes it: its peers by id, its rules, its two versions. */
  static final class Agent {
    final Nodes.Enrolled node;
    JsonArray endpoints;
    final Map<String, JsonObject> peers = new HashMap<>();
    Set<Object> rules = new HashSet<>();
    long peersVersion;
    long aclVersion;

    Agent(Nodes.Enrolled node, String endpoint) {
      this.node = node;
      this.endpoints = new JsonArray().add(endpoint);
    }

    void apply(JsonObject answer) {
      JsonObject p = answer.getJsonObject("peers");
      if (p.containsKey("items")) {
        peers.clear();
        p.getJsonArray("items").forEach(o -> peers.put(((JsonObject) o).getString("id"), (JsonObject) o));
      } else if (!p.getBoolean("unchanged", false)) {
        p.getJsonArray("changed").forEach(o -> peers.put(((JsonObject) o).getString("id"), (JsonObject) o));
        p.getJsonArray("removed").forEach(peers::remove);
      }
      JsonObject a = answer.getJsonObject("acl");
      if (a.containsKey("rules")) rules = set(a.getJsonArray("rules"));
      peersVersion = p.getLong("version");
      aclVersion = a.getLong("version");
    }

    String query() {
      return "peers=" + peersVersion + "&acl=" + aclVersion;
    }
  }

  @Test
  @Timeout(150)
  void agentsOfAKilledReplicaReconnectToTheSurvivorAndTheirFirstAnswerMissesNothing(@TempDir Path dir) throws Exception {
    long t0 = System.currentTimeMillis();
    replicas = new ReplicaJvms(dir, 2);
    try {
      run(t0);
    } finally {
      open.forEach(WatchClient::close);
      vertx.close();
      http.close();
      replicas.close();
    }
  }

  private void run(long t0) throws Exception {
    // 1. two replica JVMs in one cluster, an admin token from the CLI, ten nodes that are each other's peers
    replicas.start(http);
    int one = replicas.port(0);
    int two = replicas.port(1);
    admin = replicas.cli("token", "create", "--name", "kill", "--team", "*", "--environment", "*", "--surface", "admin", "--expires", "1d");
    List<Agent> agents = new ArrayList<>();
    for (int i = 0; i < NODES; i++) agents.add(new Agent(enroll(one, "k-" + i), "198.51.100." + (i + 1) + ":41641"));
    policy(one, "tcp/22");
    for (Agent a : agents) a.apply(beat(two, a, 0, 0));
    // every node's first heartbeat (endpoints, online) is flushed and applied before any stream opens, so
    // that nothing of it reaches the change log after the kill
    for (int i = 0; i < NODES; i++) {
      Agent a = agents.get(i);
      Agent other = agents.get((i + 1) % NODES);
      Await.until(other.node.name() + " sees " + a.node.name() + " online at its endpoints", 30_000, () -> beat(two, other, 0, 0),
          ans -> peer(ans, a.node.id()) != null && peer(ans, a.node.id()).getBoolean("online")
              && a.endpoints.equals(peer(ans, a.node.id()).getJsonArray("endpoints")));
    }

    // 2. each agent: a heartbeat for its state and versions, then its stream(s) on replica 2 from those versions
    Map<Agent, List<WatchClient>> streams = new HashMap<>();
    for (int i = 0; i < NODES; i++) {
      Agent a = agents.get(i);
      a.apply(beat(two, a, 0, 0));
      assertEquals(NODES - 1, a.peers.size(), "every other node is a peer of " + a.node.name());
      List<WatchClient> held = new ArrayList<>();
      for (int s = 0; s < (i < DOUBLE ? 2 : 1); s++) {
        WatchClient w = watch(two, a);
        assertEquals(200, w.status, w.body);
        JsonObject first = w.nextAnswer(10_000);
        assertEquals("answer", first.getString("type"), first.encode());
        if (s == 0) a.apply(first);
        held.add(w);
      }
      streams.put(a, held);
    }

    // 3. SIGKILL replica 2: every stream ends on the agent's side
    long killedAt = System.currentTimeMillis();
    replicas.kill(1);
    for (Agent a : agents) {
      for (WatchClient w : streams.get(a)) Await.until(a.node.name() + "'s stream on the killed replica ended", 15_000, w.ended::isDone);
      // what arrived before the end is applied, in order, as an agent would (from its first stream)
      for (JsonObject line : streams.get(a).get(0).lines) if ("answer".equals(line.getString("type"))) a.apply(line);
    }
    long endedIn = System.currentTimeMillis() - killedAt;

    // 4. while the streams are down, on replica 1: a policy change that alters every node's rules, and a node's new endpoints
    Map<Agent, Long> aclHeld = new HashMap<>();
    agents.forEach(a -> aclHeld.put(a, a.aclVersion));
    policy(one, "tcp/22", "tcp/443");
    Agent moved = agents.get(NODES - 1);
    moved.endpoints = new JsonArray().add("203.0.113.99:41641");
    moved.apply(beat(one, moved, moved.peersVersion, moved.aclVersion));
    Agent observer = agents.get(0);
    Await.until("replica 1 applied both changes", 30_000, () -> beat(one, observer, 0, 0),
        ans -> ans.getJsonObject("acl").getLong("version") > aclHeld.get(observer) && peer(ans, moved.node.id()) != null
            && moved.endpoints.equals(peer(ans, moved.node.id()).getJsonArray("endpoints")));

    // 5. every agent reconnects to replica 1 with the versions it held: its first answer brings it up to date
    long reconnectAt = System.currentTimeMillis();
    long placesFreeAfter = -1;
    for (int i = 0; i < NODES; i++) {
      Agent a = agents.get(i);
      JsonObject current = beat(one, a, 0, 0);
      String held = a.query();
      WatchClient w = reconnect(one, a);
      if (i < DOUBLE && placesFreeAfter < 0) placesFreeAfter = System.currentTimeMillis() - killedAt;
      JsonObject first = w.nextAnswer(10_000);
      assertEquals("answer", first.getString("type"), first.encode());
      a.apply(first);
      String what = a.node.name() + " reconnected with " + held + ", first answer " + first.encode() + ", a full heartbeat answer "
          + current.encode();
      assertEquals(current.getJsonObject("peers").getLong("version"), a.peersVersion, what);
      assertEquals(current.getJsonObject("acl").getLong("version"), a.aclVersion, what);
      assertTrue(a.aclVersion > aclHeld.get(a), "the policy change moved " + a.node.name() + "'s rules: " + what);
      assertEquals(set(current.getJsonObject("acl").getJsonArray("rules")), a.rules, what);
      assertTrue(a.rules.toString().contains("tcp/443"), what);
      assertEquals(set(current.getJsonObject("peers").getJsonArray("items")), Set.copyOf(a.peers.values()), what);
      if (a != moved) assertEquals(moved.endpoints, a.peers.get(moved.node.id()).getJsonArray("endpoints"), what);
    }

    // 6. a node that held both places on the killed replica holds both on the survivor, and no third
    for (int i = 0; i < DOUBLE; i++) {
      Agent a = agents.get(i);
      WatchClient second = watch(one, a);
      assertEquals(200, second.status, a.node.name() + "'s second stream on the survivor: " + second.body);
      second.nextAnswer(10_000);
      WatchClient third = watch(one, a);
      assertEquals(409, third.status, a.node.name() + "'s third stream: " + third.body);
      assertEquals("too_many_streams", third.problem().getString("code"), third.body);
    }
    System.out.printf("watch replica kill: %d nodes (%d with 2 streams); streams ended %d ms after the SIGKILL; the dead replica's places"
        + " were free %d ms after it (%d reconnections refused 409 before); %d reconnects checked in %d ms; total %d ms%n", NODES, DOUBLE,
        endedIn, placesFreeAfter, refusedWhileDeadCounted, NODES,
        System.currentTimeMillis() - reconnectAt, System.currentTimeMillis() - t0);
  }

  /** A reconnection, repeated while the survivor still counts the dead member's claims (409 until Hazelcast has removed it). */
  private WatchClient reconnect(int port, Agent a) {
    record Attempt(WatchClient c) {
      @Override
      public String toString() {
        return c.status + " " + c.body;
      }
    }
    WatchClient w = Await.until(a.node.name() + " reconnected", 60_000, () -> {
      WatchClient c = watch(port, a);
      if (c.status == 409) {
        refusedWhileDeadCounted++;
        assertEquals("too_many_streams", c.problem().getString("code"), c.body);
        c.close();
      }
      return new Attempt(c);
    }, t -> t.c().status != 409).c();
    assertEquals(200, w.status, a.node.name() + ": " + w.body);
    return w;
  }

  private WatchClient watch(int port, Agent a) {
    WatchClient w = WatchClient.open(vertx, port, a.node.id(), a.node.token(), a.query(), false);
    open.add(w);
    return w;
  }

  /** Entries (peers, rules) as a set of objects: their order is not specified. */
  private static Set<Object> set(JsonArray items) {
    return new HashSet<>(items.stream().toList());
  }

  private static JsonObject peer(JsonObject answer, String id) {
    JsonArray items = answer.getJsonObject("peers").getJsonArray("items");
    for (int i = 0; items != null && i < items.size(); i++) if (id.equals(items.getJsonObject(i).getString("id"))) return items.getJsonObject(i);
    return null;
  }

  private Nodes.Enrolled enroll(int port, String name) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", TEAM).put("environment", "prod")
        .put("tags", new JsonArray().add("tag:mesh"));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  /** Every node of the team reaches every other on these ports. */
  private void policy(int port, String... ports) {
    JsonObject doc = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:mesh"))
        .put("dst", new JsonArray().add("tag:mesh")).put("ports", new JsonArray(List.of((Object[]) ports)))));
    HttpResponse<Buffer> r = Await.until("the policy stored", 30_000, () -> http.send(http.request(HttpMethod.PUT, port,
        "/v1/acl?team=" + TEAM + "&environment=prod").bearerTokenAuthentication(admin).putHeader("Content-Type", "application/json"),
        doc.encode().getBytes()), x -> x.statusCode() != 503);
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  /** The agent's heartbeat (its whole state, as every heartbeat is), retried on 503 while the cluster takes over the dead member's partitions. */
  private JsonObject beat(int port, Agent a, long peers, long acl) {
    JsonObject body = new JsonObject().put("endpoints", a.endpoints).put("known", new JsonObject().put("peers", peers).put("acl", acl));
    HttpResponse<Buffer> r = Await.until(a.node.name() + "'s heartbeat taken", 30_000,
        () -> http.send(HttpMethod.POST, port, "/v1/nodes/" + a.node.id() + "/heartbeat", a.node.token(), body), x -> x.statusCode() != 503);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }
}
