package io.meshplane.heartbeat;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.partition.Partition;
import com.hazelcast.partition.PartitionService;
import com.hazelcast.query.Predicates;
import io.meshplane.observe.MeshMetrics;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which live entries a flush of the {@link WriteBehindVerticle} writes, and in which batches. The dirty
 * entries are found through the heartbeat-time index: an entry becomes dirty only when a heartbeat
 * writes it, stamped with the time it was accepted, so after a complete flush that started at T
 * everything still dirty was written after about T. The next flush looks at {@code heartbeatAt >= T -
 * margin} (the margin covers clock differences between replicas and the flush's own duration). A full
 * sweep every {@link #SWEEP_EVERY_MS} (and on start) catches anything outside the window. Partitions
 * this member gains (a member left, gracefully or not, or a new one rebalanced) arrive with their old
 * dirty entries, and writes retried during the migration land late with their first stamp: so each
 * flush compares the set of partitions owned here with the previous flush's (271 lookups in the local
 * partition table), and a gain sweeps at once and once more {@link #RESWEEP_AFTER_GAIN_MS} later. A
 * dead member's backlog is written within a flush interval of the takeover, not within a sweep period.
 *
 * <p>The keys found are cut into chunks of at most {@link #BATCH} keys, whole partitions where they fit.
 * Worker thread only (the verticle's).
 */
final class FlushPlanner {
  private static final Logger LOG = LoggerFactory.getLogger(FlushPlanner.class);
  static final int BATCH = 2000;
  static final long SWEEP_EVERY_MS = 60_000;
  static final long CLOCK_MARGIN_MS = 5_000;
  /** After this member gained partitions, a second sweep this much later catches writes retried during the migration. */
  static final long RESWEEP_AFTER_GAIN_MS = 10_000;

  private final IMap<String, LiveNode> map;
  private final HazelcastInstance hz;
  private final MeshMetrics metrics;
  private final Quarantine quarantine;
  /** Dirty entries are looked for at or after this heartbeat time; MIN_VALUE = sweep everything. */
  private long window = Long.MIN_VALUE;
  private long lastSweep;
  /** The partitions this member owned at the last flush (null before the first); a gain triggers a sweep. */
  private BitSet owned;
  /** When to sweep once more after a gain (0: not planned). */
  private long resweepAt;

  FlushPlanner(IMap<String, LiveNode> map, HazelcastInstance hz, MeshMetrics metrics, Quarantine quarantine) {
    this.map = map;
    this.hz = hz;
    this.metrics = metrics;
    this.quarantine = quarantine;
  }

  /**
   * The dirty entries this member owns that a flush starting at {@code started} writes: those in the
   * window, or all of them when it is time to sweep. A sweep also forgets the quarantined nodes that
   * were deleted meanwhile.
   *
   * @return null when the live map cannot be read (the flush is skipped; the next one tries again)
   */
  Set<String> dirty(long started) {
    boolean gained = gainedPartitions();
    if (gained) resweepAt = started + RESWEEP_AFTER_GAIN_MS;
    boolean resweep = resweepAt != 0 && started >= resweepAt;
    if (resweep) resweepAt = 0;
    boolean sweep = gained || resweep || window == Long.MIN_VALUE || started - lastSweep >= SWEEP_EVERY_MS;
    Set<String> dirty;
    try {
      dirty = sweep
          ? map.localKeySet(Predicates.equal(LiveNode.DIRTY_FIELD, true))
          : map.localKeySet(Predicates.and(
              LiveState.heartbeatSecondsBetween(LiveNode.second(window), LiveNode.second(started + CLOCK_MARGIN_MS)),
              Predicates.equal(LiveNode.DIRTY_FIELD, true)));
    } catch (RuntimeException e) {
      LOG.warn("write-behind: cannot read the live map: {}", e.getMessage());
      return null;
    }
    if (sweep) {
      lastSweep = started;
      // quarantined nodes that were deleted meanwhile (their live entry is gone) are forgotten
      for (String id : quarantine.ids()) {
        if (!map.containsKey(id) && quarantine.leave(id)) LOG.info("[node: {}] write-behind: the node is gone; it left the quarantine", id);
      }
    }
    return dirty;
  }

  /** A complete, successful flush that started at {@code started} moves the window (after a failure the old one stays). */
  /** Whether a resweep after a gain is still to come. */
  boolean resweepPlanned() {
    return resweepAt != 0;
  }

  void completed(long started, long intervalMs) {
    window = started - intervalMs - CLOCK_MARGIN_MS;
  }

  /** The next flush sweeps everything still dirty (the last one, at shutdown). */
  void sweepNext() {
    window = Long.MIN_VALUE;
  }

  /**
   * True when this member owns a partition now that it did not own at the previous call (the first call
   * only takes note: the first flush sweeps anyway).
   */
  private boolean gainedPartitions() {
    BitSet now = new BitSet(271);
    try {
      for (Partition p : hz.getPartitionService().getPartitions()) {
        Member owner = p.getOwner();
        if (owner != null && owner.localMember()) now.set(p.getPartitionId());
      }
    } catch (RuntimeException e) {
      return true; // the partition table cannot be read (shutting down, say): sweep rather than miss a gain
    }
    if (owned == null) {
      owned = now;
      return false;
    }
    BitSet gain = (BitSet) now.clone();
    gain.andNot(owned);
    owned = now;
    if (!gain.isEmpty()) metrics.writeBehindGainSweeps.increment();
    return !gain.isEmpty();
  }

  /**
   * Groups the keys by partition and cuts them into chunks of at most {@link #BATCH} keys, whole
   * partitions where they fit: each chunk is read with one entry-processor call per partition, written
   * with one UPDATE and cleared with one call per partition again.
   */
  List<List<List<String>>> chunks(Set<String> keys) {
    PartitionService partitions = hz.getPartitionService();
    Map<Integer, List<String>> byPartition = new TreeMap<>();
    for (String k : keys) byPartition.computeIfAbsent(partitions.getPartition(k).getPartitionId(), p -> new ArrayList<>()).add(k);
    List<List<List<String>>> chunks = new ArrayList<>();
    List<List<String>> chunk = new ArrayList<>();
    int size = 0;
    for (List<String> group : byPartition.values()) {
      for (int from = 0; from < group.size(); from += BATCH) {
        List<String> piece = group.subList(from, Math.min(group.size(), from + BATCH));
        if (size + piece.size() > BATCH && !chunk.isEmpty()) {
          chunks.add(chunk);
          chunk = new ArrayList<>();
          size = 0;
        }
        chunk.add(piece);
        size += piece.size();
      }
    }
    if (!chunk.isEmpty()) chunks.add(chunk);
    return chunks;
  }
}
