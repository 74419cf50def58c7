package io.meshplane.observe;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

/**
 * The product's own metric families (API.md §15), registered at start so dashboards and alerts can be
 * built before the first node exists. No per-node labels: a million nodes must not mean a million series.
 */
public final class MeshMetrics {
  public enum NodeStatus { PENDING, ONLINE, STALE }

  public final Counter heartbeats;
  public final Counter staleTransitions;
  public final Counter enrollUnconfirmed;
  public final io.micrometer.core.instrument.DistributionSummary heartbeatBatchSize;
  public final Counter heartbeatStoreRetries;
  public final AtomicLong writeBehindBacklog = new AtomicLong();
  public final io.micrometer.core.instrument.DistributionSummary writeBehindBatchSize;
  public final io.micrometer.core.instrument.Timer writeBehindFlush;
  public final Counter writeBehindFailures;
  public final Counter writeBehindGainSweeps;
  public final Counter writeBehindQuarantined;
  private final Map<NodeStatus, AtomicLong> nodeCounts = new EnumMap<>(NodeStatus.class);
  /** Where the quarantined-rows gauge reads from: 0 until the write-behind exists (it needs PostgreSQL). */
  private volatile IntSupplier quarantinedRows = () -> 0;
  /** Where the policy-drift gauge reads from: 0 until the policy feature exists. */
  private volatile IntSupplier policyDrift = () -> 0;
  private final MeterRegistry registry;

  public MeshMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.heartbeats = Counter.builder("mesh.node.heartbeats")
        .description("Heartbeats accepted by this replica").register(registry);
    this.enrollUnconfirmed = Counter.builder("mesh.node.enroll.unconfirmed")
        .description("Enrollments reported because no heartbeat came within nodes.pending_ttl (node.enroll_unconfirmed)").register(registry);
    this.heartbeatBatchSize = io.micrometer.core.instrument.DistributionSummary.builder("mesh.heartbeat.batch.size")
        .description("Heartbeats written to the cluster map together (one group commit of one event loop)").register(registry);
    this.heartbeatStoreRetries = Counter.builder("mesh.heartbeat.store.retries")
        .description("Heartbeat map writes retried once because their outcome was indeterminate (the owner or backup member left, or a backup timed out)")
        .register(registry);
    this.staleTransitions = Counter.builder("mesh.node.stale.transitions")
        .description("online->stale transitions detected by this replica").register(registry);
    Gauge.builder("mesh.writebehind.backlog", writeBehindBacklog, AtomicLong::doubleValue)
        .description("Live entries owned here whose last heartbeat is not in PostgreSQL yet").register(registry);
    this.writeBehindBatchSize = io.micrometer.core.instrument.DistributionSummary.builder("mesh.writebehind.batch.size")
        .description("Rows per write-behind batch").register(registry);
    this.writeBehindFlush = io.micrometer.core.instrument.Timer.builder("mesh.writebehind.flush")
        .description("Duration of one write-behind flush (all batches)").register(registry);
    this.writeBehindFailures = Counter.builder("mesh.writebehind.failures")
        .description("Write-behind batches that failed (retried on the next flush)").register(registry);
    this.writeBehindGainSweeps = Counter.builder("mesh.writebehind.takeover.sweeps")
        .description("Full write-behind sweeps because this replica gained partitions (a member left or joined)").register(registry);
    this.writeBehindQuarantined = Counter.builder("mesh.writebehind.quarantined")
        .description("Rows PostgreSQL refused on their own (isolated from their batch and quarantined), counted once per node")
        .register(registry);
    Gauge.builder("mesh.writebehind.quarantined.rows", this, m -> m.quarantinedRows.getAsInt())
        .description("Nodes whose rows PostgreSQL refuses now, written on their own (see /readyz)").register(registry);
    Gauge.builder("mesh.node.policy.drift", this, m -> m.policyDrift.getAsInt())
        .description("Nodes that stay behind the ACL version sent to them (drift records in the partitions this replica owns)")
        .register(registry);
    for (NodeStatus s : NodeStatus.values()) {
      AtomicLong v = new AtomicLong();
      nodeCounts.put(s, v);
      Gauge.builder("mesh.nodes", v, AtomicLong::doubleValue)
          .description("Nodes by live status in the partitions this replica owns")
          .tag("status", s.name().toLowerCase(java.util.Locale.ROOT))
          .register(registry);
    }
  }

  /** The source of {@code mesh_writebehind_quarantined_rows}, once the write-behind's quarantine exists. */
  public void quarantinedRowsFrom(IntSupplier source) {
    quarantinedRows = source;
  }

  /** The source of {@code mesh_node_policy_drift}, once the policy feature exists. */
  public void policyDriftFrom(IntSupplier source) {
    policyDrift = source;
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
