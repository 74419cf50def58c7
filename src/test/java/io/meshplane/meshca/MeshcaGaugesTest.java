package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Certificates;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * On two replicas, the node certificate gauges are sampled by the oldest member only: it reports the
 * mesh's figure, the other reports 0 and runs no query, however often its sampler runs; the CA expiry
 * gauge is on both.
 */
@Timeout(180)
class MeshcaGaugesTest {
  static TestCluster cluster;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("meshca.secret", MeshcaTest.SECRET, "metrics.gauge_interval", "1s"));
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void onlyTheOldestReplicaCountsTheNodesCertificates() throws Exception {
    Meshplane oldest = cluster.replica(0);
    Meshplane other = cluster.replica(1);
    Http http = cluster.http();
    Nodes.Enrolled n = Nodes.enroll(http, oldest.coordinatorPort(), cluster.admin(), "gauged", "gauge-a", "prod");
    Certificates.shift(cluster, Certificates.issue(oldest, n, "gauge-a", "prod").serial(), Duration.ofMinutes(-30));

    Await.until("the oldest replica counts the expired node", 40_000,
        () -> Metrics.value(http, oldest.coordinatorPort(), "mesh_meshca_node_certificates{state=\"expired\"}"), v -> v == 1.0);
    long ticks = other.meshca().gauges().ticks();
    Await.until("the other replica's sampler ran twice more", 40_000, () -> other.meshca().gauges().ticks(), t -> t >= ticks + 2);
    assertEquals(0.0, Metrics.value(http, other.coordinatorPort(), "mesh_meshca_node_certificates{state=\"expired\"}"));
    assertEquals(0, other.meshca().gauges().queries(), "no counts query on a replica that is not the oldest");
    // every replica reports the CAs' time to expiry
    for (Meshplane r : new Meshplane[] {oldest, other}) {
      String body = http.get(r.coordinatorPort(), "/metrics").bodyAsString();
      assertEquals(2, body.lines().filter(l -> l.startsWith("mesh_meshca_authority_expiry_seconds{")).count(), body);
    }
  }
}
