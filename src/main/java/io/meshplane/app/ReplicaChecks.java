package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.observe.Readiness;
import io.vertx.core.Future;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.util.function.Supplier;

/**
 * The replica's own readiness checks (features add theirs through their modules): PostgreSQL answers,
 * this member is in the cluster, the API is in place.
 */
final class ReplicaChecks {
  private ReplicaChecks() {}

  /**
   * @param pool the pool once the start has built it, else null
   * @param waitingFor why PostgreSQL is not used yet (the reason shown until {@code pool} gives one)
   * @param deployment null when the API is in place, else why not
   */
  static void register(Readiness readiness, Supplier<Pool> pool, Supplier<String> waitingFor, HazelcastClusterManager clusterManager,
      HazelcastInstance hz, Supplier<String> deployment) {
    readiness
        .registerAsync("postgres", () -> {
          Pool p = pool.get();
          return p == null ? Future.failedFuture(waitingFor.get()) : p.query("SELECT 1").execute();
        }, t -> pool.get() == null ? t.getMessage() : "PostgreSQL does not answer")
        .registerLocal("cluster", () -> clusterManager.isActive() && hz.getLifecycleService().isRunning()
            && hz.getCluster().getMembers().contains(hz.getCluster().getLocalMember()) ? null : "not a member of the cluster")
        .registerLocal("deployment", deployment);
  }
}
