package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
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
      long deadline = System.currentTimeMillis() + 20_000;
      String owned;
      do {
        owned = http.get(a.coordinatorPort(), "/metrics").bodyAsString().lines()
            .filter(l -> l.startsWith("hazelcast_partitions_owned")).findFirst().orElse("");
        if (!owned.endsWith(" 271.0") && !owned.endsWith(" 0.0")) break;
        Thread.sleep(200);
      } while (System.currentTimeMillis() < deadline);
      assertTrue(!owned.endsWith(" 271.0") && !owned.endsWith(" 0.0"), owned);
    }
  }
}
