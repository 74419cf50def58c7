package io.meshplane.heartbeat;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.partition.PartitionService;
import com.hazelcast.query.Predicates;
import io.meshplane.node.NodeRepository;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Persists live state to PostgreSQL, coalesced (one per replica, deployed as a worker: the Hazelcast
 * calls here block, the heartbeat path never waits on this). Each flush takes the dirty entries that
 * this member owns, writes them in batches of one multi-row UPDATE each, then clears each dirty mark
 * only if the entry is unchanged since it was read (a newer heartbeat keeps it dirty for the next
 * flush). So a node costs at most one row write per flush interval however often it beats, and since
 * the mark lives in the entry (with its backup), a crashed member's backlog is flushed by the new owner.
 * PostgreSQL down: nothing is cleared, the backlog (at most one entry per node) waits and is reported.
 *
 * <p>Finding the dirty entries uses the heartbeat-time index: an entry becomes dirty only when a
 * heartbeat writes it, stamped with the time it was accepted, so after a complete flush that started at
 * T everything still dirty was written after about T. The next flush looks at {@code heartbeatAt >=
 * T - margin} (the margin covers clock differences between replicas and the flush's own duration). A
 * full sweep every {@link #SWEEP_EVERY_MS} (and on start) catches anything outside the window, such
 * as the backlog of a dead member whose partitions this member took over.
 */
public final class WriteBehindVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(WriteBehindVerticle.class);
  static final int BATCH = 2000;
  static final long SWEEP_EVERY_MS = 60_000;
  static final long CLOCK_MARGIN_MS = 5_000;

  private final IMap<String, LiveNode> map;
  private final HazelcastInstance hz;
  private final NodeRepository nodes;
  private final MeshMetrics metrics;
  private final Duration interval;
  private long timer = -1;
  private boolean running;
  /** Dirty entries are looked for at or after this heartbeat time; MIN_VALUE = sweep everything. */
  private long window = Long.MIN_VALUE;
  private long lastSweep;

  public WriteBehindVerticle(LiveState live, NodeRepository nodes, MeshMetrics metrics, Duration interval) {
    this.map = live.map();
    this.hz = live.hazelcast();
    this.nodes = nodes;
    this.metrics = metrics;
    this.interval = interval;
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(interval.toMillis(), id -> tick());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    // Last chance for entries this member owns (on a single-member cluster they would be lost with it):
    // after the flush under way, one more, sweeping everything still dirty.
    window = Long.MIN_VALUE;
    Future<Void> before = current == null ? Future.succeededFuture() : current.recover(t -> Future.succeededFuture());
    return before.compose(v -> flush()).recover(t -> Future.succeededFuture());
  }

  private void tick() {
    if (running) return;
    running = true;
    long t0 = System.nanoTime();
    current = flush().onComplete(ar -> {
      running = false;
      metrics.writeBehindFlush.record(Duration.ofNanos(System.nanoTime() - t0));
    });
  }

  private Future<Void> current;

  /** One flush of every dirty entry owned here. Runs on this worker's thread; batches go one after the other. */
  Future<Void> flush() {
    long started = System.currentTimeMillis();
    boolean sweep = window == Long.MIN_VALUE || started - lastSweep >= SWEEP_EVERY_MS;
    Set<String> dirty;
    try {
      dirty = sweep
          ? map.localKeySet(Predicates.equal(LiveNode.DIRTY_FIELD, true))
          : map.localKeySet(Predicates.and(
              LiveState.heartbeatSecondsBetween(LiveNode.second(window), LiveNode.second(started + CLOCK_MARGIN_MS)),
              Predicates.equal(LiveNode.DIRTY_FIELD, true)));
    } catch (RuntimeException e) {
      LOG.warn("write-behind: cannot read the live map: {}", e.getMessage());
      return Future.succeededFuture();
    }
    if (sweep) lastSweep = started;
    metrics.writeBehindBacklog.set(dirty.size());
    failedThisRound = false;
    Future<Void> done = dirty.isEmpty() ? Future.succeededFuture() : nextChunk(chunks(dirty).iterator());
    return done.onComplete(ar -> {
      // a complete, successful flush moves the window; after a failure the old window stays
      if (!failedThisRound) window = started - interval.toMillis() - CLOCK_MARGIN_MS;
    });
  }

  private boolean failedThisRound;

  /**
   * Fewer rows written than entries: some nodes were deleted (a heartbeat accepted just before the
   * deletion can re-create a live entry after it was removed). Their entries are dropped here.
   */
  private Future<Void> dropLeftovers(String[] ids) {
    return nodes.missing(ids).map(gone -> {
      for (String id : gone) {
        map.delete(id);
        LOG.info("[node: {}] live entry of a deleted node dropped", id);
      }
      return null;
    });
  }

  /**
   * Groups the keys by partition and cuts them into chunks of at most {@link #BATCH} keys, whole
   * partitions where they fit: each chunk is read with one entry-processor call per partition, written
   * with one UPDATE and cleared with one call per partition again.
   */
  private List<List<List<String>>> chunks(Set<String> keys) {
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

  /** Per partition of the chunk, in parallel: the dirty values (entries cleaned or gone meanwhile are left out). */
  private Future<Map<String, LiveNode>> readDirty(List<List<String>> chunk) {
    List<Future<Map<String, LiveNode>>> reads = new ArrayList<>(chunk.size());
    for (List<String> piece : chunk) {
      reads.add(Future.fromCompletionStage(map.submitToKeys(new HashSet<>(piece), FlushProcessors.ReadDirty.INSTANCE), context));
    }
    return Future.all(reads).map(all -> {
      Map<String, LiveNode> out = new HashMap<>();
      for (Future<Map<String, LiveNode>> f : reads) out.putAll(f.result());
      return out;
    });
  }

  /** Per partition of the chunk, in parallel: clears the marks of entries still equal to what was written. */
  private Future<Integer> clearUnchanged(List<List<String>> chunk, Map<String, LiveNode> written) {
    List<Future<Map<String, Boolean>>> clears = new ArrayList<>(chunk.size());
    for (List<String> piece : chunk) {
      List<String> keys = new ArrayList<>(piece.size());
      List<LiveNode> values = new ArrayList<>(piece.size());
      for (String k : piece) {
        LiveNode v = written.get(k);
        if (v != null) {
          keys.add(k);
          values.add(v);
        }
      }
      if (keys.isEmpty()) continue;
      FlushProcessors.ClearIfUnchanged clear =
          new FlushProcessors.ClearIfUnchanged(keys.toArray(new String[0]), values.toArray(new LiveNode[0]));
      clears.add(Future.fromCompletionStage(map.submitToKeys(new HashSet<>(keys), clear), context));
    }
    return Future.all(clears).map(all -> {
      int cleared = 0;
      for (Future<Map<String, Boolean>> f : clears) cleared += f.result().size();
      return cleared;
    });
  }

  private Future<Void> nextChunk(Iterator<List<List<String>>> it) {
    if (!it.hasNext()) return Future.succeededFuture();
    List<List<String>> chunk = it.next();
    return readDirty(chunk).compose(read -> {
      if (read.isEmpty()) return nextChunk(it);
      int n = read.size();
      String[] ids = new String[n];
      Long[] hb = new Long[n];
      String[] ep = new String[n];
      String[] rt = new String[n];
      String[] relay = new String[n];
      String[] tel = new String[n];
      int i = 0;
      for (Map.Entry<String, LiveNode> e : read.entrySet()) {
        LiveNode l = e.getValue();
        ids[i] = e.getKey();
        hb[i] = l.heartbeatAt();
        ep[i] = String.join(",", l.endpoints());
        rt[i] = String.join(",", l.routes());
        relay[i] = l.relay();
        tel[i] = l.telemetry();
        i++;
      }
      return nodes.flushLive(ids, hb, ep, rt, relay, tel)
          .compose(written -> written == n ? Future.succeededFuture(written) : dropLeftovers(ids).map(written))
          .compose(written -> {
            metrics.writeBehindBatchSize.record(n);
            return clearUnchanged(chunk, read).compose(cleared -> {
              metrics.writeBehindBacklog.addAndGet(-cleared);
              return nextChunk(it);
            });
          }, failure -> {
            failedThisRound = true;
            metrics.writeBehindFailures.increment();
            LOG.warn("write-behind: batch of {} not written, kept dirty for the next flush: {}", n, failure.getMessage());
            return Future.succeededFuture();
          });
    }, failure -> {
      failedThisRound = true;
      LOG.warn("write-behind: cannot read {} live entries, kept dirty for the next flush: {}", chunk.stream().mapToInt(List::size).sum(),
          failure.getMessage());
      return Future.succeededFuture();
    });
  }
}
