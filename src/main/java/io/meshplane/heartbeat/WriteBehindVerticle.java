package io.meshplane.heartbeat;

import com.hazelcast.map.IMap;
import com.hazelcast.query.Predicates;
import io.meshplane.node.NodeRepository;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
    Future<Void> done = dirty.isEmpty() ? Future.succeededFuture() : nextBatch(dirty.iterator());
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

  private Future<Void> nextBatch(Iterator<String> it) {
    if (!it.hasNext()) return Future.succeededFuture();
    Set<String> keys = new java.util.HashSet<>();
    while (it.hasNext() && keys.size() < BATCH) keys.add(it.next());
    Map<String, LiveNode> entries = map.getAll(keys);
    List<String> ids = new ArrayList<>();
    List<LiveNode> read = new ArrayList<>();
    for (Map.Entry<String, LiveNode> e : entries.entrySet()) {
      if (e.getValue() != null && e.getValue().dirty()) {
        ids.add(e.getKey());
        read.add(e.getValue());
      }
    }
    if (ids.isEmpty()) return nextBatch(it);
    int n = ids.size();
    Long[] hb = new Long[n];
    String[] ep = new String[n];
    String[] rt = new String[n];
    String[] relay = new String[n];
    String[] tel = new String[n];
    for (int i = 0; i < n; i++) {
      LiveNode l = read.get(i);
      hb[i] = l.heartbeatAt();
      ep[i] = String.join(",", l.endpoints());
      rt[i] = String.join(",", l.routes());
      relay[i] = l.relay();
      tel[i] = l.telemetry();
    }
    String[] idArray = ids.toArray(new String[0]);
    return nodes.flushLive(idArray, hb, ep, rt, relay, tel)
        .compose(written -> written == n ? Future.succeededFuture(written) : dropLeftovers(idArray).map(written))
        .compose(written -> {
          metrics.writeBehindBatchSize.record(n);
          int cleared = 0;
          for (int i = 0; i < n; i++) {
            LiveNode l = read.get(i);
            // only if unchanged since read: a heartbeat that came meanwhile stays dirty
            if (map.replace(ids.get(i), l, l.clean())) cleared++;
          }
          metrics.writeBehindBacklog.addAndGet(-cleared);
          return nextBatch(it);
        }, failure -> {
          failedThisRound = true;
          metrics.writeBehindFailures.increment();
          LOG.warn("write-behind: batch of {} not written, kept dirty for the next flush: {}", n, failure.getMessage());
          return Future.succeededFuture();
        });
  }
}
