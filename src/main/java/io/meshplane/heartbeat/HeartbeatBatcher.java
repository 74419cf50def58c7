package io.meshplane.heartbeat;

import com.hazelcast.map.IMap;
import io.micrometer.core.instrument.DistributionSummary;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Group commit of heartbeats, one batcher per event loop. One cluster-map round trip per heartbeat
 * cannot reach the fleet's rate (measured: ~2,500/s for a route doing one {@code getAsync}); so the
 * heartbeats of this event loop are written together with one {@code setAllAsync}, which Hazelcast
 * splits into one operation per owning member. Batching is adaptive, not timed: the first heartbeat
 * after an idle moment is written at the end of the current event-loop turn (no added wait); while
 * {@link #MAX_IN_FLIGHT} writes are under way, newcomers gather and go together as soon as one returns.
 * Light load gets the lowest latency, heavy load the largest batches.
 *
 * <p>Each request is answered only once its batch is stored with its synchronous backup: an
 * acknowledged heartbeat survives the loss of a member. Not thread-safe by design: only its own event
 * loop touches it.
 */
public final class HeartbeatBatcher {
  static final int MAX_IN_FLIGHT = 2;

  private final Context context;
  private final IMap<String, LiveNode> map;
  private final int maxBatch;
  private final DistributionSummary batchSizes;
  private Map<String, LiveNode> batch = new HashMap<>();
  private List<Promise<Void>> waiters = new ArrayList<>();
  private boolean flushScheduled;
  private int inFlight;

  public HeartbeatBatcher(Context context, IMap<String, LiveNode> map, int maxBatch, DistributionSummary batchSizes) {
    this.context = context;
    this.batchSizes = batchSizes;
    this.map = map;
    this.maxBatch = maxBatch;
  }

  /** Completes when the heartbeat is stored (with its backup) in the cluster map. Call on this batcher's event loop. */
  public Future<Void> submit(String nodeId, LiveNode live) {
    Promise<Void> p = Promise.promise();
    batch.put(nodeId, live);
    waiters.add(p);
    scheduleFlush();
    return p.future();
  }

  private void scheduleFlush() {
    if (flushScheduled || batch.isEmpty()) return;
    if (inFlight < MAX_IN_FLIGHT || batch.size() >= maxBatch) {
      flushScheduled = true;
      // after the reads of this event-loop turn, so requests arriving together go together
      context.runOnContext(v -> flush());
    }
  }

  private void flush() {
    flushScheduled = false;
    if (batch.isEmpty()) return;
    Map<String, LiveNode> writing = batch;
    List<Promise<Void>> answering = waiters;
    batch = new HashMap<>();
    waiters = new ArrayList<>();
    inFlight++;
    batchSizes.record(writing.size());
    map.setAllAsync(writing).whenComplete((v, err) -> context.runOnContext(x -> {
      inFlight--;
      for (Promise<Void> p : answering) {
        if (err == null) p.complete();
        else p.fail(err);
      }
      scheduleFlush();
    }));
  }
}
