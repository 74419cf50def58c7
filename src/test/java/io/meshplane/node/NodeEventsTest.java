package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Node changes are events every replica hears, whichever replica made or found the change: enrolled
 * and deleted (the inventory), new endpoints, relay and key (the write-behind, from what PostgreSQL
 * held before and after), stale and online again (the staleness monitors). A heartbeat that changes
 * nothing publishes nothing.
 */
@Timeout(120)
class NodeEventsTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static final List<NodeEvents.NodeEvent> heardOnB = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("writebehind.flush_interval", "200ms", "heartbeat.stale_after", "2s"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    b.nodes().events().subscribe(heardOnB::add);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static void beat(Nodes.Enrolled n, JsonObject body) {
    assertEquals(200, http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body).statusCode());
  }

  static NodeEvents.NodeEvent await(NodeEvents.Type type, String nodeId) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 15_000;
    while (System.currentTimeMillis() < deadline) {
      for (NodeEvents.NodeEvent e : heardOnB) {
        if (e.type() == type && e.nodeIds().contains(nodeId)) return e;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("replica b never heard " + type + " of " + nodeId + "; heard " + heardOnB);
  }

  static long count(Predicate<NodeEvents.NodeEvent> p) {
    return heardOnB.stream().filter(p).count();
  }

  @Test
  void everyReplicaHearsWhatAnyReplicaChangedOrFound() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "ev-1", "web", "prod");
    await(NodeEvents.Type.ENROLLED, n.id());

    JsonObject body = new JsonObject().put("endpoints", new JsonArray().add("198.51.100.7:41641")).put("relay", "fra1")
        .put("public_key", Nodes.key());
    beat(n, body);
    await(NodeEvents.Type.ENDPOINTS_CHANGED, n.id());
    await(NodeEvents.Type.RELAY_CHANGED, n.id());

    // the same state again: written (a new heartbeat time), but nothing changed, so nothing is published
    long before = count(e -> e.nodeIds().contains(n.id()));
    beat(n, body);
    Thread.sleep(1000); // several flushes
    assertEquals(before, count(e -> e.nodeIds().contains(n.id())), "no event for a heartbeat that changes nothing");

    beat(n, body.copy().put("endpoints", new JsonArray().add("198.51.100.8:41641")));
    long deadline = System.currentTimeMillis() + 10_000;
    while (count(e -> e.type() == NodeEvents.Type.ENDPOINTS_CHANGED && e.nodeIds().contains(n.id())) < 2
        && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(2, count(e -> e.type() == NodeEvents.Type.ENDPOINTS_CHANGED && e.nodeIds().contains(n.id())));
    assertEquals(1, count(e -> e.type() == NodeEvents.Type.RELAY_CHANGED && e.nodeIds().contains(n.id())), "the relay did not change");
    assertEquals(0, count(e -> e.type() == NodeEvents.Type.KEY_CHANGED && e.nodeIds().contains(n.id())),
        "a node's first reported key is not a key change");

    // a new key is a change; a heartbeat that leaves the key out is not (the last reported key stays)
    JsonObject newKey = body.copy().put("endpoints", new JsonArray().add("198.51.100.8:41641")).put("public_key", Nodes.key());
    beat(n, newKey);
    await(NodeEvents.Type.KEY_CHANGED, n.id());
    JsonObject noKey = newKey.copy();
    noKey.remove("public_key");
    beat(n, noKey);
    Thread.sleep(600); // written in a flush of its own
    beat(n, newKey);
    Thread.sleep(1000);
    assertEquals(1, count(e -> e.type() == NodeEvents.Type.KEY_CHANGED && e.nodeIds().contains(n.id())),
        "leaving the key out and sending it again is no key change");

    // silence: stale after 2 s (once for the cluster), then online again with the next heartbeat
    await(NodeEvents.Type.STALE, n.id());
    beat(n, body);
    await(NodeEvents.Type.ONLINE, n.id());
    assertEquals(1, count(e -> e.type() == NodeEvents.Type.STALE && e.nodeIds().contains(n.id())), "exactly once cluster-wide");

    assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + n.id(), cluster.admin(), null).statusCode());
    NodeEvents.NodeEvent deleted = await(NodeEvents.Type.DELETED, n.id());
    assertTrue(deleted.atMillis() > 0);
    List<NodeEvents.Type> order = new ArrayList<>();
    for (NodeEvents.NodeEvent e : heardOnB) if (e.nodeIds().contains(n.id())) order.add(e.type());
    assertEquals(NodeEvents.Type.ENROLLED, order.get(0));
    assertEquals(NodeEvents.Type.DELETED, order.get(order.size() - 1));
  }

  /** A message this replica cannot read (a newer replica's event type in a rolling upgrade) is skipped in one line; the next one is heard. */
  @Test
  void anUnreadableEventIsSkippedWithoutAStackTraceAndTheNextOneIsHeard() throws Exception {
    try (LogCapture logs = LogCapture.attach()) {
      a.vertx().eventBus().publish(NodeEvents.ADDRESS, new JsonObject().put("type", "TELEPORTED").put("nodes", new JsonArray().add("nd_x"))
          .put("at", 1L));
      a.vertx().eventBus().publish(NodeEvents.ADDRESS, new JsonObject().put("type", "ENROLLED"));
      a.vertx().eventBus().publish(NodeEvents.ADDRESS, "not an event");
      String id = "nd_01m8000000000000000000next";
      a.nodes().events().publish(NodeEvents.Type.ENROLLED, id);
      await(NodeEvents.Type.ENROLLED, id);
      assertEquals(List.of(), logs.problems());
    }
  }
}
