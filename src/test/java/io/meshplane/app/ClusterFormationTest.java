package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.vertx.core.eventbus.MessageConsumer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Two replicas started in one test form one Hazelcast cluster, over loopback TCP-IP only. */
@Timeout(180)
class ClusterFormationTest {
  @Test
  void twoMembersFormOneClusterAndBothAreReady() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      Http http = cluster.http();
      Meshplane a = cluster.start(0);
      Meshplane b = cluster.start(1);
      assertEquals(2, a.hazelcast().getCluster().getMembers().size());
      assertEquals(2, b.hazelcast().getCluster().getMembers().size());
      for (Meshplane m : new Meshplane[] {a, b}) {
        assertEquals(200, http.get(m.coordinatorPort(), "/readyz").statusCode());
        String metrics = http.get(m.coordinatorPort(), "/metrics").bodyAsString();
        assertTrue(metrics.contains("hazelcast_cluster_members 2.0"), "member count 2 in /metrics");
        assertTrue(m.hazelcast().getCluster().getLocalMember().getAddress().getHost().equals("127.0.0.1"));
      }
      // the partitions are spread over both members (migration after a join takes a moment)
      Await.until("the partitions spread over both members", 20_000, () -> http.get(a.coordinatorPort(), "/metrics").bodyAsString().lines()
          .filter(l -> l.startsWith("hazelcast_partitions_owned")).findFirst().orElse(""), owned -> !owned.isEmpty()
          && !owned.endsWith(" 271.0") && !owned.endsWith(" 0.0"));
    }
  }

  /**
   * With {@code cluster.eventbus_port} pinned (as behind a NetworkPolicy), each replica's event bus
   * listens there and a message reaches the other replica over it.
   */
  @Test
  void aPinnedEventBusPortIsWhereReplicasTalk() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      int portA = FreePorts.next();
      int portB = FreePorts.next();
      Meshplane a = cluster.start(0, Map.of("cluster.eventbus_port", String.valueOf(portA)));
      Meshplane b = cluster.start(1, Map.of("cluster.eventbus_port", String.valueOf(portB)));
      for (int port : new int[] {portA, portB}) {
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress("127.0.0.1", port), 2000); // refused unless the bus listens there
        }
      }
      CompletableFuture<String> received = new CompletableFuture<>();
      MessageConsumer<String> onB = b.vertx().eventBus().consumer("test.pinned-port", m -> received.complete(m.body()));
      Http.await(onB.completion(), 30);
      // a send (not a publish) goes to one registered consumer: only B has one, so it crosses to B's port
      a.vertx().eventBus().send("test.pinned-port", "from A");
      assertEquals("from A", received.get(30, TimeUnit.SECONDS));
    }
  }
}
