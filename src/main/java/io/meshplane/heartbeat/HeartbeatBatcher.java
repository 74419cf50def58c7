package io.meshplane.heartbeat;

import com.hazelcast.core.IndeterminateOperationStateException;
import com.hazelcast.map.IMap;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit of heartbeats, one batcher per event loop. One cluster-map round trip per heartbeat,
 * each answered on its own, cannot reach the fleet's rate (measured: ~2,500/s for a route doing one
 * {@code getAsync}). So the heartbeats of this event loop are gathered and written together:
 * batching is adaptive, not timed. The first heartbeat after an idle moment is written at the end of
 * the current event-loop turn (no added wait); while {@link #MAX_IN_FLIGHT} batches are under way,
 * newcomers gather and go together as soon as one returns. Light load gets the lowest latency, heavy
 * load the largest batches.
 *
 * <p>A batch is one {@code setAsync} per entry, all sent in one go; their completions run on the
 * Hazelcast thread that completes them and only count down, and the last one hands the whole batch
 * back to the event loop in one task. Each {@code setAsync} is an invocation that completes only once
 * the synchronous backup has acknowledged, so an answered heartbeat survives the loss of a member.
 * ({@code setAllAsync} was used before and is cheaper in operations, but Hazelcast 5.3 runs it
 * through a partition-iterating operation that answers without waiting for backups, and its
 * callbacks hop through a generic thread and the common ForkJoin pool: it was also slower.) Each
 * request gets its own outcome. Not thread-safe by design: only its own event loop touches it.
 *
 * <p>A write whose outcome is indeterminate (the map proxy fails on an indeterminate state: the
 * partition's owner or backup member left while it ran, or the backup did not acknowledge in time) is
 * sent again, after 0.5 s and then 1.5 s, before the heartbeat is refused: writing the same live entry
 * again is idempotent (an agent sends its next heartbeat only after this one is answered), and by then
 * the partition's owner is the promoted backup. So a member's crash costs the heartbeats in flight at
 * that member a late answer, not a 503; only a third indeterminate outcome is refused (503 with
 * {@code Retry-After}).
 */
final class HeartbeatBatcher {
  static final int MAX_IN_FLIGHT = 2;
  /** Pauses before the retries of a write whose outcome was indeterminate (a member left mid-write). */
  private static final long[] RETRY_DELAYS_MS = {500, 1500};
  private static final Logger LOG = LoggerFactory.getLogger(HeartbeatBatcher.class);
  private static final Executor INLINE = Runnable::run;

  private final Context context;
  private final IMap<String, LiveNode> map;
  private final int maxBatch;
  private final DistributionSummary batchSizes;
  private final Counter retries;
  private List<String> ids = new ArrayList<>();
  private List<LiveNode> values = new ArrayList<>();
  private List<Promise<Void>> waiters = new ArrayList<>();
  private boolean flushScheduled;
  private int inFlight;

  public HeartbeatBatcher(Context context, IMap<String, LiveNode> map, int maxBatch, DistributionSummary batchSizes, Counter retries) {
    this.context = context;
    this.batchSizes = batchSizes;
    this.retries = retries;
    this.map = map;
    this.maxBatch = maxBatch;
  }

  /** Completes when the heartbeat is stored (with its backup) in the cluster map. Call on this batcher's event loop. */
  public Future<Void> submit(String nodeId, LiveNode live) {
    Promise<Void> p = Promise.promise();
    ids.add(nodeId);
    values.add(live);
    waiters.add(p);
    scheduleFlush();
    return p.future();
  }

  private void scheduleFlush() {
    if (flushScheduled || ids.isEmpty()) return;
    if (inFlight < MAX_IN_FLIGHT || ids.size() >= maxBatch) {
      flushScheduled = true;
      // after the reads of this event-loop turn, so requests arriving together go together
      context.runOnContext(v -> flush());
    }
  }

  private void flush() {
    flushScheduled = false;
    if (ids.isEmpty()) return;
    List<String> writingIds = ids;
    List<LiveNode> writingValues = values;
    List<Promise<Void>> answering = waiters;
    ids = new ArrayList<>();
    values = new ArrayList<>();
    waiters = new ArrayList<>();
    inFlight++;
    int n = writingIds.size();
    batchSizes.record(n);
    Throwable[] errors = new Throwable[n];
    AtomicInteger left = new AtomicInteger(n);
    for (int i = 0; i < n; i++) write(writingIds.get(i), writingValues.get(i), i, 0, errors, left, answering);
  }

  /** One entry's write; its completion runs inline on the Hazelcast thread and, the last one, hands the batch back. */
  private void write(String id, LiveNode value, int slot, int attempt, Throwable[] errors, AtomicInteger left, List<Promise<Void>> answering) {
    CompletionStage<Void> stored;
    try {
      stored = map.setAsync(id, value);
    } catch (RuntimeException e) {
      errors[slot] = e;
      if (left.decrementAndGet() == 0) context.runOnContext(x -> answer(answering, errors));
      return;
    }
    stored.whenCompleteAsync((v, err) -> {
      if (err != null && attempt < RETRY_DELAYS_MS.length && indeterminate(err)) {
        // after a pause: right after a member's death the partition table may still name it (as the
        // owner or the backup), and an immediate second write meets the same indeterminate state
        retries.increment();
        context.owner().setTimer(RETRY_DELAYS_MS[attempt], t -> write(id, value, slot, attempt + 1, errors, left, answering));
        return;
      }
      if (err != null) {
        errors[slot] = err;
        if (attempt > 0) LOG.warn("[node: {}] heartbeat not stored after {} retries: {}", id, attempt, rootCause(err));
      }
      if (left.decrementAndGet() == 0) context.runOnContext(x -> answer(answering, errors));
    }, INLINE);
  }

  private static String rootCause(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return c.getClass().getSimpleName() + ": " + c.getMessage();
  }

  private static boolean indeterminate(Throwable t) {
    Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    return c instanceof IndeterminateOperationStateException;
  }

  private void answer(List<Promise<Void>> answering, Throwable[] errors) {
    inFlight--;
    for (int i = 0; i < answering.size(); i++) {
      if (errors[i] == null) answering.get(i).complete();
      else answering.get(i).fail(errors[i]);
    }
    scheduleFlush();
  }
}
