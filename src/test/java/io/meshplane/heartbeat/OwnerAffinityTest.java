package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Owner affinity (API.md §11, "coordinator"): in a cluster whose replicas advertise their URLs, a
 * heartbeat answer names the replica that really owns the node's live entry, whichever replica
 * answered; the hint follows the partition table when a replica leaves; one replica gives no hint.
 */
@Timeout(180)
class OwnerAffinityTest {
  private static final int NODES = 60;

  @Test
  void answersNameTheReplicaThatOwnsTheLiveEntryAndFollowALeavingReplica() {
    int[] ports = {FreePorts.next(), FreePorts.next(), FreePorts.next()};
    try (TestCluster cluster = TestCluster.of(3)) {
      Meshplane[] members = new Meshplane[3];
      Map<String, Meshplane> byUrl = new HashMap<>();
      for (int i = 0; i < 3; i++) {
        String url = "http://127.0.0.1:" + ports[i];
        members[i] = cluster.start(i, Map.of("http.port", String.valueOf(ports[i]), "cluster.advertise_url", url));
        byUrl.put(url, members[i]);
      }
      Http http = cluster.http();
      String root = cluster.admin();
      List<Nodes.Enrolled> fleet = new ArrayList<>();
      for (int i = 0; i < NODES; i++) fleet.add(Nodes.enroll(http, ports[0], root, "aff-" + i, "aff", "prod"));
      // every replica's table is built from the settled partition table (no migration under way) before the first look
      for (Meshplane m : members) {
        Await.until("replica " + m.coordinatorPort() + " sees 3 members and no migration",
            () -> m.hazelcast().getCluster().getMembers().size() == 3 && m.hazelcast().getPartitionService().isClusterSafe());
      }
      for (Meshplane m : members) {
        long seen = m.heartbeat().ownerHintRefreshes();
        Await.until("replica " + m.coordinatorPort() + " rebuilt its owner hints", () -> m.heartbeat().ownerHintRefreshes() > seen);
      }

      Set<String> named = new HashSet<>();
      for (int i = 0; i < NODES; i++) {
        Nodes.Enrolled n = fleet.get(i);
        JsonObject answer = beat(http, ports[i % 3], n, i);
        String url = answer.getString("coordinator");
        assertNotNull(url, "the answer names an owner: " + answer.encode());
        Meshplane owner = byUrl.get(url);
        assertNotNull(owner, "the hint is one of the advertised URLs: " + url);
        named.add(url);
        // the named replica really holds the entry: in its own member's part of the live map, and the partition table agrees
        assertTrue(owner.heartbeat().live().map().localKeySet().contains(n.id()), n.id() + " is stored on " + url);
        assertEquals(owner.hazelcast().getCluster().getLocalMember().getUuid(),
            members[0].hazelcast().getPartitionService().getPartition(n.id()).getOwner().getUuid(), n.id() + "'s partition owner");
        assertTrue(answer.containsKey("relay") && answer.getInteger("interval_s") > 0, "the fields around it are intact: " + answer.encode());
      }
      assertEquals(3, named.size(), "60 nodes spread over the three owners: " + named);

      // the owner and another replica both take the node's heartbeats, and both name the same owner
      Nodes.Enrolled first = fleet.get(0);
      String ownerUrl = beat(http, ports[0], first, 1000).getString("coordinator");
      int ownerPort = byUrl.get(ownerUrl).coordinatorPort();
      int otherPort = ports[0] == ownerPort ? ports[1] : ports[0];
      assertEquals(ownerUrl, beat(http, ownerPort, first, 1001).getString("coordinator"));
      assertEquals(ownerUrl, beat(http, otherPort, first, 1002).getString("coordinator"));

      // a replica leaves: once the partitions have moved, no answer names it, and each names the new owner
      String leaving = "http://127.0.0.1:" + ports[2];
      members[2].close();
      Await.until("no hint names the replica that left", 30_000, () -> {
        for (int i = 0; i < NODES; i++) {
          String url = beat(http, ports[i % 2], fleet.get(i), 2000 + i).getString("coordinator");
          if (url == null || url.equals(leaving)) return false;
          Meshplane owner = byUrl.get(url);
          if (!owner.heartbeat().live().map().localKeySet().contains(fleet.get(i).id())) return false;
        }
        return true;
      });
    }
  }

  @Test
  void aSingleReplicaGivesNoHint() {
    int port = FreePorts.next();
    try (TestCluster cluster = TestCluster.started(1, Map.of("http.port", String.valueOf(port),
        "cluster.advertise_url", "http://127.0.0.1:" + port))) {
      Nodes.Enrolled n = Nodes.enroll(cluster.http(), port, cluster.admin(), "solo", "aff", "prod");
      JsonObject answer = beat(cluster.http(), port, n, 1);
      assertFalse(answer.containsKey("coordinator"), answer.encode());
      assertTrue(answer.containsKey("relay"), answer.encode());
    }
  }

  private static JsonObject beat(Http http, int port, Nodes.Enrolled n, int seq) {
    Future<HttpResponse<Buffer>> f = http.sendAsync(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(seq));
    HttpResponse<Buffer> r = Http.await(f, 30);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }
}
