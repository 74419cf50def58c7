package io.meshplane.changes;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.TransactionPropagation;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this replica's followers (the peer model, the operations board) in step with the change log:
 * loads them from a consistent snapshot at start (and whenever the replica has fallen behind what the
 * log still holds), then applies new entries in seq order, polling every {@value #POLL_MS} ms and at
 * once when poked (an announcement from any replica). One worker verticle per replica: entries are
 * applied by one thread, in order, never on an event loop.
 */
final class ChangeFeed extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ChangeFeed.class);
  static final long POLL_MS = 250;
  private static final int BATCH = 1000;
  /** How long log entries are kept: a replica further behind loads a snapshot instead. */
  static final long KEEP_SECONDS = 3600;

  private final Pool pool;
  private final ChangeLog log;
  private final List<ChangeLog.Follower> followers;
  private final TreeMap<Long, List<Promise<Void>>> waiting = new TreeMap<>();
  /** The last seq applied to every follower (written by the feed's thread only). */
  private volatile long position;
  private boolean polling;
  private boolean again;
  private long timer = -1;
  private long trimTimer = -1;

  ChangeFeed(Pool pool, ChangeLog log, List<ChangeLog.Follower> followers) {
    this.pool = pool;
    this.log = log;
    this.followers = followers;
  }

  long position() {
    return position;
  }

  /**
   * Loads every follower from one consistent snapshot: the clock, and what each follower reads, in one
   * REPEATABLE READ transaction; the position becomes the clock's seq.
   */
  Future<Long> loadSnapshot() {
    return pool.withTransaction(TransactionPropagation.NONE, tx -> tx.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute()
        .compose(v -> ChangeLog.clock(tx))
        .compose(seq -> {
          Future<Void> chain = Future.succeededFuture();
          for (ChangeLog.Follower f : followers) chain = chain.compose(v -> f.load(tx, seq));
          return chain.map(v -> {
            position = seq;
            return seq;
          });
        }));
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(POLL_MS, id -> poll());
    trimTimer = vertx.setPeriodic(300_000, id -> log.trim(KEEP_SECONDS)
        .onFailure(t -> LOG.debug("change log not trimmed: {}", t.getMessage())));
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    vertx.cancelTimer(trimTimer);
    return Future.succeededFuture();
  }

  /** Polls now (from any thread): something was just appended. */
  void poke() {
    context.runOnContext(v -> poll());
  }

  /** Completes once every follower has applied the log up to {@code seq} (from any thread). */
  Future<Void> applied(long seq) {
    Promise<Void> p = Promise.promise();
    context.runOnContext(v -> {
      if (position >= seq) {
        p.tryComplete();
      } else {
        waiting.computeIfAbsent(seq, k -> new ArrayList<>()).add(p);
        poll();
      }
    });
    return p.future();
  }

  private void poll() {
    if (polling) {
      again = true;
      return;
    }
    polling = true;
    again = false;
    long from = position;
    log.after(from, BATCH).compose(entries -> {
      if (!entries.isEmpty() && entries.get(0).seq() != from + 1) {
        LOG.warn("the change log no longer holds the entries after {} (this replica was behind for over {} s): loading a snapshot",
            from, KEEP_SECONDS);
        return loadSnapshot().map(seq -> true);
      }
      for (ChangeLog.Entry e : entries) {
        apply(e);
        position = e.seq();
      }
      return Future.succeededFuture(entries.size() == BATCH);
    }).onComplete(ar -> {
      polling = false;
      if (ar.failed()) LOG.debug("change log not read: {}", ar.cause().getMessage());
      release();
      if (again || (ar.succeeded() && ar.result())) poll();
    });
  }

  private void release() {
    Iterator<Map.Entry<Long, List<Promise<Void>>>> it = waiting.headMap(position, true).entrySet().iterator();
    while (it.hasNext()) {
      for (Promise<Void> p : it.next().getValue()) p.tryComplete();
      it.remove();
    }
  }

  private void apply(ChangeLog.Entry e) {
    boolean used = false;
    for (ChangeLog.Follower f : followers) {
      try {
        used |= f.apply(e);
      } catch (RuntimeException ex) {
        // an entry this version cannot read (a newer replica during a rolling upgrade): skipped, one line
        LOG.warn("skipped change {} ({}) for a follower: {}", e.seq(), e.kind(), ex.toString());
        used = true;
      }
    }
    if (!used) LOG.warn("skipped change {} of unknown kind {}", e.seq(), e.kind());
  }
}
