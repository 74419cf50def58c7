package io.meshplane.observe;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The product's own metric families (SPEC §8), registered at start so dashboards and alerts can be
 * built before the first node exists. No per-node labels: a million nodes must not mean a million series.
 */
public final class MeshMetrics {
  public enum NodeStatus { PENDING, ONLINE, STALE }

  public final Counter heartbeats;
  public final Counter staleTransitions;
  private final Map<NodeStatus, AtomicLong> nodeCounts = new EnumMap<>(NodeStatus.class);
  private final MeterRegistry registry;

  public MeshMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.heartbeats = Counter.builder("mesh.node.heartbeats")
        .description("Heartbeats accepted by this replica").register(registry);
    this.staleTransitions = Counter.builder("mesh.node.stale.transitions")
        .description("online->stale transitions detected by this replica").register(registry);
    for (NodeStatus s : NodeStatus.values()) {
      AtomicLong v = new AtomicLong();
      nodeCounts.put(s, v);
      Gauge.builder("mesh.node.count", v, AtomicLong::doubleValue)
          .description("Nodes by live status in the partitions this replica owns")
          .tag("status", s.name().toLowerCase(java.util.Locale.ROOT))
          .register(registry);
    }
  }

  public void setNodeCount(NodeStatus status, long count) {
    nodeCounts.get(status).set(count);
  }

  public Counter authFailure(String reason) {
    return Counter.builder("mesh.auth.failures").tag("reason", reason)
        .description("Rejected credentials by reason").register(registry);
  }

  public MeterRegistry registry() {
    return registry;
  }
}
