package io.meshplane.heartbeat;

import com.hazelcast.cluster.Member;
import com.hazelcast.cluster.MembershipEvent;
import com.hazelcast.cluster.MembershipListener;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.partition.MigrationListener;
import com.hazelcast.partition.MigrationState;
import com.hazelcast.partition.Partition;
import com.hazelcast.partition.PartitionService;
import com.hazelcast.partition.ReplicaMigrationEvent;
import io.meshplane.node.OwnerHint;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owner affinity: the replica whose Hazelcast member owns a node's live entry, as that replica
 * advertises itself ({@code cluster.advertise_url}, published as the member attribute
 * {@link LiveState#ADVERTISE_ATTRIBUTE}). A heartbeat sent there writes the live map locally instead of over the network.
 *
 * <p>The answer side is a table, partition id → the owner's pre-encoded {@code "coordinator":"<url>",}
 * (or null), rebuilt off the event loops when members come or go and when partitions migrate, and every
 * {@value #REFRESH_MS} ms as a backstop (a promotion after a member's crash is not always announced as
 * a migration). {@link #append} is the key's partition id (the same hash of the same serialized
 * {@code String} key as the live map's) and one array read: no lock, no remote call, no wait.
 */
final class LiveOwners implements OwnerHint {
  private static final Logger LOG = LoggerFactory.getLogger(LiveOwners.class);
  static final long REFRESH_MS = 2000;

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final PartitionService partitions;
  /** Index: partition id; null: no hint for that partition. Empty: no hint at all (one member, nobody advertises). */
  private volatile Buffer[] byPartition = new Buffer[0];
  private final AtomicLong refreshes = new AtomicLong();
  private UUID membershipListener;
  private UUID migrationListener;
  private long timer = -1;

  LiveOwners(Vertx vertx, HazelcastInstance hz) {
    this.vertx = vertx;
    this.hz = hz;
    this.partitions = hz.getPartitionService();
  }

  @Override
  public void append(String nodeId, Buffer out) {
    Buffer[] table = byPartition;
    if (table.length == 0) return;
    int id = partitions.getPartition(nodeId).getPartitionId();
    Buffer fragment = id < table.length ? table[id] : null;
    if (fragment != null) out.appendBuffer(fragment);
  }

  /** Builds the table (blocking, at start) and keeps it current from then on. */
  void start() {
    refresh();
    membershipListener = hz.getCluster().addMembershipListener(new MembershipListener() {
      @Override
      public void memberAdded(MembershipEvent e) {
        refreshLater();
      }

      @Override
      public void memberRemoved(MembershipEvent e) {
        refreshLater();
      }
    });
    migrationListener = partitions.addMigrationListener(new MigrationListener() {
      @Override
      public void migrationStarted(MigrationState state) {
        // the owners change when it finishes
      }

      @Override
      public void migrationFinished(MigrationState state) {
        refreshLater();
      }

      @Override
      public void replicaMigrationCompleted(ReplicaMigrationEvent event) {
        // one per partition: the whole process's end (migrationFinished) refreshes once
      }

      @Override
      public void replicaMigrationFailed(ReplicaMigrationEvent event) {
        refreshLater();
      }
    });
    timer = vertx.setPeriodic(REFRESH_MS, t -> refreshLater());
  }

  void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
    try {
      if (membershipListener != null) hz.getCluster().removeMembershipListener(membershipListener);
      if (migrationListener != null) partitions.removeMigrationListener(migrationListener);
    } catch (RuntimeException e) {
      LOG.debug("owner-hint listeners not removed: {}", e.getMessage());
    }
    byPartition = new Buffer[0];
  }

  /** How many times the table was rebuilt (tests wait on it instead of sleeping). */
  long refreshes() {
    return refreshes.get();
  }

  /** Off the caller's thread: a Hazelcast event thread or a timer on an event loop must not do the work. */
  private void refreshLater() {
    vertx.executeBlocking(() -> {
      refresh();
      return null;
    }, false).onFailure(e -> LOG.debug("owner hints not refreshed: {}", e.getMessage()));
  }

  /**
   * Partition by partition, its owner's fragment. Nothing with fewer than two members (every write is
   * local already), nothing for an owner that advertises nothing or is not (or no longer) a member.
   */
  synchronized void refresh() {
    try {
      if (!hz.getLifecycleService().isRunning()) {
        byPartition = new Buffer[0];
        return;
      }
      Map<UUID, Buffer> fragments = new HashMap<>();
      for (Member m : hz.getCluster().getMembers()) {
        String url = m.getAttribute(LiveState.ADVERTISE_ATTRIBUTE);
        if (url != null && !url.isEmpty()) {
          fragments.put(m.getUuid(), Buffer.buffer("\"coordinator\":" + Json.encode(url) + ","));
        }
      }
      if (hz.getCluster().getMembers().size() < 2 || fragments.isEmpty()) {
        byPartition = new Buffer[0];
        return;
      }
      Buffer[] table = new Buffer[partitions.getPartitions().size()];
      for (Partition p : partitions.getPartitions()) {
        Member owner = p.getOwner();
        if (owner != null && p.getPartitionId() < table.length) table[p.getPartitionId()] = fragments.get(owner.getUuid());
      }
      byPartition = table;
    } catch (RuntimeException e) {
      // a member shutting down, say: the previous table stays until the next refresh
      LOG.debug("owner hints not refreshed: {}", e.getMessage());
    } finally {
      refreshes.incrementAndGet();
    }
  }
}
