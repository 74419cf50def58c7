package io.meshplane.observe;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.partition.Partition;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

/** Member-level Hazelcast gauges: all read from local state, so a scrape never waits on the network. */
public final class HazelcastMetrics implements MeterBinder {
  private final HazelcastInstance hz;

  public HazelcastMetrics(HazelcastInstance hz) {
    this.hz = hz;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Gauge.builder("hazelcast.cluster.members", hz, h -> running(h) ? h.getCluster().getMembers().size() : 0)
        .description("Members in the cluster as this member sees it").register(registry);
    Gauge.builder("hazelcast.member.running", hz, h -> running(h) ? 1 : 0)
        .description("1 while this Hazelcast member runs").register(registry);
    Gauge.builder("hazelcast.partitions.owned", hz, HazelcastMetrics::ownedPartitions)
        .description("Partitions whose primary replica this member holds").register(registry);
  }

  private static boolean running(HazelcastInstance h) {
    return h.getLifecycleService().isRunning();
  }

  private static double ownedPartitions(HazelcastInstance h) {
    if (!running(h)) return 0;
    Member local = h.getCluster().getLocalMember();
    int owned = 0;
    for (Partition p : h.getPartitionService().getPartitions()) {
      if (local.equals(p.getOwner())) owned++;
    }
    return owned;
  }
}
