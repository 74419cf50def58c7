package io.meshplane.heartbeat;

import com.hazelcast.map.IMap;
import io.meshplane.changes.ChangeLog;
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
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Persists live state to PostgreSQL, coalesced (one per replica, deployed as a worker: the Hazelcast
 * calls here block, the heartbeat path never waits on this). Each flush takes the dirty entries that
 * this member owns ({@link FlushPlanner}: the window, the sweeps, the chunks) and writes them in batches
 * of one multi-row UPDATE each ({@link RowWriter}; a row PostgreSQL refuses is isolated by
 * {@link PoisonIsolation}). A dirty mark is cleared only if the entry is unchanged since it was written
 * (a newer heartbeat keeps it dirty for the next flush), and that check is made by the next flush's own
 * read ({@link FlushProcessors.Settle}): one entry-processor pass per flush, and no clearing write at
 * all for a node that beat again meanwhile. So a node costs at most one row write per flush interval
 * however often it beats, and since the mark lives in the entry (with its backup), a crashed member's
 * backlog is flushed by the new owner; what a member loses with its memory is only the list of rows it
 * wrote last, which costs the new owner one redundant (identical) row write per node, never a lost one.
 * PostgreSQL down: nothing is cleared, the backlog (at most one entry per node) waits and is reported.
 *
 * <p>This class holds the timer, the flush's course (read, write, settle, announce) and the shutdown.
 */
final class WriteBehindVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(WriteBehindVerticle.class);
  /** The longest a flush waits for one cluster call before giving up on this flush (retried at the next). */
  static final long CALL_TIMEOUT_MS = 10_000;
  /**
   * At most this many written rows wait for the next flush to settle their marks (~250 B each); more
   * (a backlog flushed after an outage) are settled at once, with one more pass over them.
   */
  static final int SETTLE_LATER_MAX = 20_000;

  private final IMap<String, LiveNode> map;
  private final ChangeLog.Feed changes;
  private final MeshMetrics metrics;
  private final Duration interval;
  private final Quarantine quarantine;
  private final FlushPlanner planner;
  private final RowWriter writer;
  private final PoisonIsolation isolation;
  private long timer = -1;
  private boolean running;
  private Future<Void> current;
  private boolean failedThisRound;
  /** Whether a resweep after a gain is still to come, as of the last completed flush (read by tests). */
  volatile boolean resweepPlanned;

  public WriteBehindVerticle(LiveState live, LiveRepository nodes, ChangeLog.Feed changes, MeshMetrics metrics, Quarantine quarantine,
      Duration interval) {
    this.quarantine = quarantine;
    this.changes = changes;
    this.map = live.map();
    this.metrics = metrics;
    this.interval = interval;
    this.planner = new FlushPlanner(map, live.hazelcast(), metrics, quarantine);
    this.writer = new RowWriter(nodes, map, quarantine);
    this.isolation = new PoisonIsolation(writer, quarantine, metrics);
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
    planner.sweepNext();
    Future<Void> before = current == null ? Future.succeededFuture() : current.recover(t -> Future.succeededFuture());
    // and then settles what it wrote, so that a member leaving hands over clean entries
    return before.compose(v -> flush()).compose(v -> settleNow()).recover(t -> Future.succeededFuture());
  }

  private void tick() {
    if (running) return;
    running = true;
    long t0 = System.nanoTime();
    Future<Void> flushed;
    try {
      flushed = flush();
    } catch (RuntimeException e) {
      // Whatever a Hazelcast call throws (a member leaving, this one stopping) must not leave `running`
      // set: that once stopped a replica's flushes for good in the cluster drill.
      LOG.warn("write-behind: flush failed, retried at the next tick: {}", e.toString());
      flushed = Future.failedFuture(e);
    }
    current = flushed.onComplete(ar -> {
      running = false;
      metrics.writeBehindFlush.record(Duration.ofNanos(System.nanoTime() - t0));
    });
  }

  /**
   * One flush of every dirty entry owned here, and of the entries the previous flush wrote (their marks
   * are settled on the way). Runs on this worker's thread; batches go one after the other.
   */
  Future<Void> flush() {
    long started = System.currentTimeMillis();
    Set<String> dirty = planner.dirty(started);
    if (dirty == null) return Future.succeededFuture();
    Map<String, LiveNode> settling = writer.takeWritten();
    Set<String> keys;
    if (settling.isEmpty()) {
      keys = dirty;
    } else {
      keys = new HashSet<>(dirty);
      keys.addAll(settling.keySet());
    }
    metrics.writeBehindBacklog.set(keys.size());
    failedThisRound = false;
    // through compose, so that a throw on the way still ends in the handler below (which keeps `settling`)
    Future<Void> done = keys.isEmpty() ? Future.succeededFuture()
        : Future.<Void>succeededFuture().compose(v -> nextChunk(planner.chunks(keys).iterator(), settling));
    return done.onComplete(ar -> {
      if (ar.failed()) {
        failedThisRound = true;
        LOG.warn("write-behind: flush stopped, what is left stays dirty for the next flush: {}", ar.cause().toString());
      }
      publishChanges();
      // rows of the previous flush that this one did not reach (it stopped at a failure): settled next time
      writer.keepUnsettled(settling);
      // a complete, successful flush moves the window; after a failure the old window stays
      if (!failedThisRound) planner.completed(started, interval.toMillis());
      resweepPlanned = planner.resweepPlanned();
    });
  }

  /**
   * Per partition of the chunk, in parallel: settles the marks of the rows in {@code settling} (cleared
   * where unchanged since written) and returns the values dirty now (entries gone meanwhile are left out).
   */
  private Future<Map<String, LiveNode>> settleAndRead(List<List<String>> chunk, Map<String, LiveNode> settling) {
    List<Future<Map<String, LiveNode>>> reads = new ArrayList<>(chunk.size());
    for (List<String> piece : chunk) {
      List<String> keys = new ArrayList<>();
      List<LiveNode> values = new ArrayList<>();
      for (String k : piece) {
        LiveNode v = settling.get(k);
        if (v != null) {
          keys.add(k);
          values.add(v);
        }
      }
      FlushProcessors.Settle settle = new FlushProcessors.Settle(keys.toArray(new String[0]), values.toArray(new LiveNode[0]));
      // bounded: in the cluster drill one caught in another member's departure went unanswered for over
      // 15 s, and every later flush of this replica waited behind it (a late answer is ignored; the
      // entries stay dirty for the next flush)
      reads.add(Future.fromCompletionStage(map.submitToKeys(new HashSet<>(piece), settle), context)
          .timeout(CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS));
    }
    return Future.all(reads).map(all -> {
      Map<String, LiveNode> out = new HashMap<>();
      for (Future<Map<String, LiveNode>> f : reads) out.putAll(f.result());
      return out;
    });
  }

  /**
   * Settles the marks of everything written so far at once (one more pass): at shutdown, and when a
   * large backlog was written (so that the rows waiting to be settled stay few).
   */
  private Future<Void> settleNow() {
    Map<String, LiveNode> settling = writer.takeWritten();
    if (settling.isEmpty()) return Future.succeededFuture();
    Future<Void> all = Future.succeededFuture();
    for (List<List<String>> chunk : planner.chunks(settling.keySet())) {
      // what changed since it was written is dirty with a recent heartbeat: the next flush's window has it
      all = all.compose(v -> settleAndRead(chunk, settling).<Void>mapEmpty());
    }
    return all.recover(t -> {
      LOG.warn("write-behind: cannot settle {} written entries (they stay dirty and are written once more): {}",
          settling.size(), t.getMessage());
      return Future.succeededFuture();
    });
  }

  /**
   * Announces this flush's change-log entries (what peers see of the nodes it wrote: endpoints, key,
   * online), once per flush, for every statement that committed (also when a later one failed): every
   * replica's feed reads them at once instead of at its next poll.
   */
  private void publishChanges() {
    if (writer.takeAppended()) changes.announce();
  }

  private Future<Void> nextChunk(Iterator<List<List<String>>> it, Map<String, LiveNode> settling) {
    if (!it.hasNext()) return Future.succeededFuture();
    List<List<String>> chunk = it.next();
    int chunkKeys = chunk.stream().mapToInt(List::size).sum();
    return settleAndRead(chunk, settling).compose(read -> {
      // settled: from now on these are clean, written again below, or gone
      Map<String, LiveNode> before = new HashMap<>();
      for (List<String> piece : chunk) {
        for (String k : piece) {
          LiveNode was = settling.remove(k);
          if (was != null) before.put(k, was);
        }
      }
      if (read.isEmpty()) {
        metrics.writeBehindBacklog.addAndGet(-chunkKeys);
        return nextChunk(it, settling);
      }
      int n = read.size();
      // quarantined nodes are written one by one, never in a batch with others
      List<String> ids = new ArrayList<>(n);
      List<String> alone = new ArrayList<>();
      for (String id : read.keySet()) (quarantine.contains(id) ? alone : ids).add(id);
      return isolation.writeIsolating(ids, read, before)
          .compose(v -> isolation.writeAlone(alone.iterator(), read))
          .compose(v -> {
            metrics.writeBehindBatchSize.record(n);
            metrics.writeBehindBacklog.addAndGet(-chunkKeys);
            return writer.writtenCount() > SETTLE_LATER_MAX ? settleNow() : Future.<Void>succeededFuture();
          }, failure -> {
            failedThisRound = true;
            metrics.writeBehindFailures.increment();
            LOG.warn("write-behind: batch of {} not written, kept dirty for the next flush: {}", n, failure.getMessage());
            return Future.failedFuture(failure);
          })
          .compose(v -> nextChunk(it, settling), failure -> Future.succeededFuture());
    }, failure -> {
      failedThisRound = true;
      LOG.warn("write-behind: cannot read {} live entries, kept dirty for the next flush: {}", chunkKeys, failure.getMessage());
      return Future.succeededFuture();
    });
  }
}
