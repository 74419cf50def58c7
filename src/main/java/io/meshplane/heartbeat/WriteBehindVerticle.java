package io.meshplane.heartbeat;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.partition.Partition;
import com.hazelcast.partition.PartitionService;
import com.hazelcast.query.Predicates;
import io.meshplane.changes.ChangeLog;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.pgclient.PgException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Persists live state to PostgreSQL, coalesced (one per replica, deployed as a worker: the Hazelcast
 * calls here block, the heartbeat path never waits on this). Each flush takes the dirty entries that
 * this member owns and writes them in batches of one multi-row UPDATE each. A dirty mark is cleared
 * only if the entry is unchanged since it was written (a newer heartbeat keeps it dirty for the next
 * flush), and that check is made by the next flush's own read ({@link FlushProcessors.Settle}): one
 * entry-processor pass per flush, and no clearing write at all for a node that beat again meanwhile.
 * So a node costs at most one row write per flush interval however often it beats, and since the mark
 * lives in the entry (with its backup), a crashed member's backlog is flushed by the new owner; what
 * a member loses with its memory is only the list of rows it wrote last, which costs the new owner one
 * redundant (identical) row write per node, never a lost one. PostgreSQL down: nothing is cleared,
 * the backlog (at most one entry per node) waits and is reported.
 *
 * <p>Finding the dirty entries uses the heartbeat-time index: an entry becomes dirty only when a
 * heartbeat writes it, stamped with the time it was accepted, so after a complete flush that started at
 * T everything still dirty was written after about T. The next flush looks at {@code heartbeatAt >=
 * T - margin} (the margin covers clock differences between replicas and the flush's own duration),
 * plus the entries it wrote last time. A full sweep every {@link #SWEEP_EVERY_MS} (and on start)
 * catches anything outside the window. Partitions this member gains (a member left, gracefully or
 * not, or a new one rebalanced) arrive with their old dirty entries, and writes retried during the
 * migration land late with their first stamp: so each flush compares the set of partitions owned here
 * with the previous flush's (271 lookups in the local partition table), and a gain sweeps at once and
 * once more {@link #RESWEEP_AFTER_GAIN_MS} later. A dead member's backlog is written within a flush
 * interval of the takeover, not within a sweep period.
 */
final class WriteBehindVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(WriteBehindVerticle.class);
  static final int BATCH = 2000;
  static final long SWEEP_EVERY_MS = 60_000;
  static final long CLOCK_MARGIN_MS = 5_000;
  /** After this member gained partitions, a second sweep this much later catches writes retried during the migration. */
  static final long RESWEEP_AFTER_GAIN_MS = 10_000;
  /** The longest a flush waits for one cluster call before giving up on this flush (retried at the next). */
  static final long CALL_TIMEOUT_MS = 10_000;
  /**
   * At most this many written rows wait for the next flush to settle their marks (~250 B each); more
   * (a backlog flushed after an outage) are settled at once, with one more pass over them.
   */
  static final int SETTLE_LATER_MAX = 20_000;

  private final IMap<String, LiveNode> map;
  private final HazelcastInstance hz;
  private final LiveRepository nodes;
  private final ChangeLog.Feed changes;
  private final MeshMetrics metrics;
  private final Duration interval;
  private final Quarantine quarantine;
  private long timer = -1;
  private boolean running;
  /** Dirty entries are looked for at or after this heartbeat time; MIN_VALUE = sweep everything. */
  private long window = Long.MIN_VALUE;
  private long lastSweep;
  /** The partitions this member owned at the last flush (null before the first); a gain triggers a sweep. Worker thread only. */
  private BitSet owned;
  /** When to sweep once more after a gain (0: not planned). Worker thread only. */
  private long resweepAt;
  /** Whether a resweep after a gain is still to come, as of the last completed flush (read by tests). */
  volatile boolean resweepPlanned;
  /** Whether a statement of this flush appended to the change log (announced when the flush ends). Worker thread only. */
  private boolean appended;
  /** Rows written whose marks are not settled yet: node id -> the value written. Worker thread only. */
  private Map<String, LiveNode> written = new HashMap<>();

  public WriteBehindVerticle(LiveState live, LiveRepository nodes, ChangeLog.Feed changes, MeshMetrics metrics, Quarantine quarantine,
      Duration interval) {
    this.quarantine = quarantine;
    this.changes = changes;
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

  private Future<Void> current;

  /**
   * One flush of every dirty entry owned here, and of the entries the previous flush wrote (their marks
   * are settled on the way). Runs on this worker's thread; batches go one after the other.
   */
  Future<Void> flush() {
    long started = System.currentTimeMillis();
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
      return Future.succeededFuture();
    }
    if (sweep) {
      lastSweep = started;
      // quarantined nodes that were deleted meanwhile (their live entry is gone) are forgotten
      for (String id : quarantine.ids()) {
        if (!map.containsKey(id) && quarantine.leave(id)) LOG.info("[node: {}] write-behind: the node is gone; it left the quarantine", id);
      }
    }
    Map<String, LiveNode> settling = written;
    written = new HashMap<>();
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
        : Future.<Void>succeededFuture().compose(v -> nextChunk(chunks(keys).iterator(), settling));
    return done.onComplete(ar -> {
      if (ar.failed()) {
        failedThisRound = true;
        LOG.warn("write-behind: flush stopped, what is left stays dirty for the next flush: {}", ar.cause().toString());
      }
      publishChanges();
      // rows of the previous flush that this one did not reach (it stopped at a failure): settled next time
      settling.forEach(written::putIfAbsent);
      // a complete, successful flush moves the window; after a failure the old window stays
      if (!failedThisRound) window = started - interval.toMillis() - CLOCK_MARGIN_MS;
      resweepPlanned = resweepAt != 0;
    });
  }

  private boolean failedThisRound;

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
   * Fewer rows written than entries: some nodes were deleted (a heartbeat accepted just before the
   * deletion can re-create a live entry after it was removed). Their entries are dropped here.
   */
  private Future<Void> dropLeftovers(String[] ids) {
    return nodes.missing(ids).map(gone -> {
      for (String id : gone) {
        map.delete(id);
        quarantine.leave(id);
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
    Map<String, LiveNode> settling = written;
    written = new HashMap<>();
    if (settling.isEmpty()) return Future.succeededFuture();
    Future<Void> all = Future.succeededFuture();
    for (List<List<String>> chunk : chunks(settling.keySet())) {
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
   * Writes {@code ids} (one statement). A field equal to the one in {@code before} (what this member
   * wrote last flush) is not sent, on the condition that the row still holds that write (its heartbeat
   * time): after a partition moved, another owner may have written the row since. Returns what the
   * statement wrote.
   */
  private Future<LiveRepository.Flushed> write(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    int n = ids.size();
    Long[] hb = new Long[n];
    Long[] prev = new Long[n];
    String[] ep = new String[n];
    String[] rt = new String[n];
    String[] relay = new String[n];
    String[] key = new String[n];
    String[] tel = new String[n];
    Long[] kp = new Long[n];
    Long[] ka = new Long[n];
    for (int i = 0; i < n; i++) {
      LiveNode l = read.get(ids.get(i));
      LiveNode was = before.get(ids.get(i));
      hb[i] = l.heartbeatAt();
      if (was != null) prev[i] = was.heartbeatAt();
      ep[i] = was != null && Arrays.equals(was.endpoints(), l.endpoints()) ? null : String.join(",", l.endpoints());
      rt[i] = was != null && Arrays.equals(was.routes(), l.routes()) ? null : String.join(",", l.routes());
      relay[i] = was != null && was.relay().equals(l.relay()) ? null : l.relay();
      key[i] = was != null && was.publicKey().equals(l.publicKey()) ? null : l.publicKey();
      tel[i] = was != null && was.telemetry().equals(l.telemetry()) ? null : l.telemetry();
      // always sent (16 bytes): the statement compares them with the row's to stamp acknowledged_at
      kp[i] = l.knownPeers();
      ka[i] = l.knownAcl();
    }
    // a statement's changes count as soon as it commits, whatever the rest of the flush does
    return nodes.flush(ids.toArray(new String[0]), hb, prev, ep, rt, relay, key, tel, kp, ka).onSuccess(this::collect);
  }

  /**
   * Fewer rows written than sent: a row with fields left out did not hold this member's previous write
   * any more (a partition moved, another owner wrote it since), or a node was deleted, or its row holds
   * this heartbeat already. The rows that had fields left out are sent again whole; those written by
   * the first statement hold this heartbeat now and are not written twice.
   */
  private Future<LiveRepository.Flushed> rewriteWhole(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    List<String> again = new ArrayList<>();
    for (String id : ids) if (before.containsKey(id)) again.add(id);
    return again.isEmpty() ? Future.succeededFuture(LiveRepository.Flushed.NONE) : write(again, read, Map.of());
  }

  private void collect(LiveRepository.Flushed f) {
    appended |= f.logged();
  }

  /**
   * Announces this flush's change-log entries (what peers see of the nodes it wrote: endpoints, key,
   * online), once per flush, for every statement that committed (also when a later one failed): every
   * replica's feed reads them at once instead of at its next poll.
   */
  private void publishChanges() {
    if (appended) changes.announce();
    appended = false;
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
      return writeIsolating(ids, read, before)
          .compose(v -> writeAlone(alone.iterator(), read))
          .compose(v -> {
            metrics.writeBehindBatchSize.record(n);
            metrics.writeBehindBacklog.addAndGet(-chunkKeys);
            return written.size() > SETTLE_LATER_MAX ? settleNow() : Future.<Void>succeededFuture();
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

  /**
   * Writes {@code ids} in one statement; when PostgreSQL refuses it for something in the data (not for
   * being unreachable), splits it in halves and writes each, down to the single row at fault, which is
   * quarantined. So one row that cannot be stored (a character PostgreSQL refuses, say) never holds
   * back the others: k bad rows among n cost about 2k·log2(n) extra statements, once.
   */
  private Future<Void> writeIsolating(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    if (ids.isEmpty()) return Future.succeededFuture();
    return writeBatch(ids, read, before).recover(failure -> {
      if (!isRowData(failure)) return Future.failedFuture(failure);
      if (ids.size() == 1) return quarantine(ids.get(0), read.get(ids.get(0)), failure);
      int mid = ids.size() / 2;
      List<String> left = ids.subList(0, mid);
      List<String> right = ids.subList(mid, ids.size());
      return writeIsolating(left, read, before).compose(v -> writeIsolating(right, read, before));
    });
  }

  /** One statement for {@code ids} (plus the follow-ups of {@link #rewriteWhole} and {@link #dropLeftovers}). */
  private Future<Void> writeBatch(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    int n = ids.size();
    return write(ids, read, before)
        .compose(f -> f.rows() == n || before.isEmpty() ? Future.succeededFuture(f) : rewriteWhole(ids, read, before).map(f::plus))
        .compose(f -> f.rows() == n ? Future.succeededFuture(f) : dropLeftovers(ids.toArray(new String[0])).map(f))
        .map(f -> {
          for (String id : ids) written.put(id, read.get(id));
          return null;
        });
  }

  /**
   * Quarantined nodes, each in a statement of its own and whole: a row written whole leaves the
   * quarantine; one still refused has its heartbeat time written alone.
   */
  private Future<Void> writeAlone(Iterator<String> it, Map<String, LiveNode> read) {
    if (!it.hasNext()) return Future.succeededFuture();
    String id = it.next();
    return writeBatch(List.of(id), read, Map.of())
        .map(v -> {
          if (quarantine.leave(id)) LOG.info("[node: {}] write-behind: the row is written whole again; it left the quarantine", id);
          return (Void) null;
        })
        .recover(failure -> isRowData(failure) ? quarantine(id, read.get(id), failure) : Future.failedFuture(failure))
        .compose(v -> writeAlone(it, read));
  }

  /**
   * Takes a row PostgreSQL refuses out of the batches (logged and counted once per node), and writes
   * its heartbeat time alone, so that the node's liveness still reaches the database. The live map
   * keeps the whole entry; the value counts as written, so its mark is settled like any other.
   */
  private Future<Void> quarantine(String id, LiveNode value, Throwable failure) {
    String reason = reason(failure);
    if (quarantine.enter(id, value, reason)) {
      metrics.writeBehindQuarantined.increment();
      LOG.warn("[node: {}] write-behind: PostgreSQL refuses this node's row ({}); it is quarantined: written on its own, "
          + "with its heartbeat time alone while the whole row is refused; every other row is written", id, reason);
    }
    String[] nothing = new String[1];
    return nodes.flush(new String[] {id}, new Long[] {value.heartbeatAt()}, new Long[1], nothing, nothing, nothing, nothing, nothing,
            new Long[1], new Long[1])
        .<Void>map(rows -> {
          written.put(id, value);
          return null;
        })
        .recover(t -> {
          if (!isRowData(t)) return Future.failedFuture(t);
          // not even the heartbeat time can be written: the value counts as handled, so the mark is settled
          written.put(id, value);
          return Future.succeededFuture();
        });
  }

  /** A refusal caused by the data of some row (SQLSTATE classes 22 data exception, 23 integrity, 54 program limit). */
  static boolean isRowData(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg && pg.getSqlState() != null) {
        String state = pg.getSqlState();
        return state.startsWith("22") || state.startsWith("23") || state.startsWith("54");
      }
    }
    return false;
  }

  private static String reason(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg) return pg.getSqlState() + " " + pg.getErrorMessage();
    }
    return String.valueOf(t.getMessage());
  }
}
