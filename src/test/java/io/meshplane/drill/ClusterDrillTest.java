package io.meshplane.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cluster drill, short (issue 17): three replica JVMs, a SIGKILL, a PostgreSQL outage, a
 * replacement, a rolling restart, and not one acknowledged heartbeat or operation lost, no request
 * failed but those in flight at the killed replica, no stale event. Sizes from system properties
 * ({@code drill.nodes}, {@code drill.phase_ms}, {@code drill.pg_down_ms}) so that
 * load-tests/cluster-drill.sh can run a longer one with the same code.
 */
@Timeout(600)
class ClusterDrillTest {
  @Test
  void aClusterThroughAKillAnOutageAReplacementAndARollingRestartLosesNothing(@TempDir Path dir) throws Exception {
    ClusterDrill.Settings settings = new ClusterDrill.Settings(Integer.getInteger("drill.nodes", 60), Long.getLong("drill.beat_ms", 1000),
        Long.getLong("drill.phase_ms", 3000), Long.getLong("drill.pg_down_ms", 5000));
    try (ClusterDrill drill = new ClusterDrill(settings, dir)) {
      ClusterDrill.Report r = drill.run();
      System.out.println(r.table());
      assertEquals(0, r.heartbeatsLostInMap(), r.table());
      assertEquals(0, r.heartbeatsLostInDb(), r.table());
      assertEquals(0, r.operationsLost(), r.table());
      assertEquals(0, r.failedOnLiveReplicas(), r.table());
      assertEquals(0, r.staleEvents(), r.table());
      assertTrue(r.convergedMs() < 30_000, r.table());
    }
  }
}
