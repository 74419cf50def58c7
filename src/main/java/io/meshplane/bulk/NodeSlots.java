package io.meshplane.bulk;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.ArrayDeque;

/**
 * The replica's one limit on bulk per-node work in flight, across every bulk running on it: a node
 * action takes a slot before it starts and gives it back when it ends; past the limit it waits in a
 * first-come queue. Nothing blocks: {@link #acquire} answers a future, completed on the waiter's own
 * context when a slot frees. The lock guards a counter and a queue (constant work), never I/O.
 *
 * <p>Why a quarter of {@code postgres.pool_size} (the replica passes it; {@value #DEFAULT} at the default
 * 16): each per-node action is a write transaction on the main pool, which heartbeat flushes,
 * enrollments and policy writes share. A quarter of the pool leaves them three quarters whatever the
 * bulks do.
 */
final class NodeSlots {
  static final int DEFAULT = 4;

  private final int limit;
  private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
  private int used;
  private int peak;

  NodeSlots(int limit) {
    if (limit < 1) throw new IllegalArgumentException("limit must be at least 1");
    this.limit = limit;
  }

  int limit() {
    return limit;
  }

  /** Completes when the caller holds a slot; it must {@link #release} it exactly once. */
  Future<Void> acquire() {
    Context ctx = Vertx.currentContext();
    Promise<Void> granted = Promise.promise();
    synchronized (this) {
      if (used < limit) {
        used++;
        peak = Math.max(peak, used);
        return Future.succeededFuture();
      }
      waiting.add(() -> {
        if (ctx == null) granted.complete();
        else ctx.runOnContext(v -> granted.complete());
      });
    }
    return granted.future();
  }

  /** Gives a slot back: to the first waiter if any (the count stays), else to the pool. */
  void release() {
    Runnable next;
    synchronized (this) {
      next = waiting.poll();
      if (next == null) used--;
    }
    if (next != null) next.run();
  }

  /** Per-node actions in flight now (tests, {@code BulkModule#nodeActionsInFlight}). */
  synchronized int inFlight() {
    return used;
  }

  /** The most ever in flight at once on this replica since start. */
  synchronized int peak() {
    return peak;
  }
}
