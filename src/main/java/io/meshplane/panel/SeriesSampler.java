package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The overview's charts, kept cheaply by the cluster. Every {@code panel.series_interval} each replica
 * samples its own figures (heartbeats it accepted, operations it closed by outcome: differences of
 * cumulative counters) into two fixed-size rings, {@value #FINE_POINTS} buckets of one interval (the
 * last hour at 10 s) and {@value #COARSE_POINTS} buckets of {@value #COARSE_FACTOR} intervals (the last
 * 24 h at 5 min); the oldest member of the cluster also samples the mesh's node counts (one counts query
 * per interval cluster-wide). Both rings go, encoded ({@link SeriesRing#encode}, a few KB), into one
 * entry of the cluster map {@value #MAP} keyed by the replica's member id, rewritten at each sample with
 * a time to live of 24 h and one coarse bucket: a replica that left (or restarted: it comes back under a
 * new id) keeps its past figures in the charts until they are older than the longest window, then its
 * entry expires. The map lives in the cluster's memory only: the series survive a replica's restart as
 * far as the other replicas hold them, and start again empty after the whole cluster restarts.
 *
 * <p>A request merges the entries ({@link SeriesMerge}); the merged answer of a window is kept until
 * its newest bucket changes, so a page polling every few seconds costs one map read per bucket.
 */
final class SeriesSampler {
  private static final Logger LOG = LoggerFactory.getLogger(SeriesSampler.class);
  static final String MAP = "meshplane.panel.series";
  static final int FINE_POINTS = 360;
  static final int COARSE_POINTS = 288;
  static final int COARSE_FACTOR = 30;

  /** What the sampler reads on each tick; the panel gets these from the wiring point. */
  interface Figures {
    /** Heartbeats this replica accepted since it started. */
    long heartbeats();

    /** Operations this replica closed since it started: succeeded, failed, expired. */
    long[] operationsClosed();

    /** The mesh's node counts {@code {online, stale, pending}} (a counts query on the read pool). */
    Future<JsonObject> meshCounts();
  }

  /** A window's definition. */
  record Window(String name, long stepMs, int points, boolean coarse) {}

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final IMap<String, byte[]> rings;
  private final String member;
  private final Figures figures;
  private final long intervalMs;
  private final SeriesRing fine;
  private final SeriesRing coarse;
  private final Map<String, Window> windows;
  private final Map<String, JsonObject> merged = new java.util.concurrent.ConcurrentHashMap<>();
  private final AtomicLong samples = new AtomicLong();
  private long timer = -1;
  private boolean stopped;
  private boolean counting;
  private long lastHeartbeats;
  private long[] lastOps;

  SeriesSampler(Vertx vertx, HazelcastInstance hz, Figures figures, Duration interval) {
    this.vertx = vertx;
    this.hz = hz;
    this.rings = hz.getMap(MAP);
    this.member = hz.getCluster().getLocalMember().getUuid().toString();
    this.figures = figures;
    this.intervalMs = Math.max(1, interval.toMillis());
    this.fine = new SeriesRing(intervalMs, FINE_POINTS);
    this.coarse = new SeriesRing(intervalMs * COARSE_FACTOR, COARSE_POINTS);
    this.windows = Map.of("1h", new Window("1h", intervalMs, FINE_POINTS, false),
        "24h", new Window("24h", intervalMs * COARSE_FACTOR, COARSE_POINTS, true));
  }

  void start() {
    lastHeartbeats = figures.heartbeats();
    lastOps = figures.operationsClosed();
    schedule();
  }

  /** The next tick half an interval into the next bucket: one sample per bucket even when a timer fires late. */
  private void schedule() {
    if (stopped) return;
    long now = System.currentTimeMillis();
    long next = (Math.floorDiv(now, intervalMs) + 1) * intervalMs + intervalMs / 2;
    timer = vertx.setTimer(Math.max(1, next - now), t -> {
      sample();
      schedule();
    });
  }

  private void sample() {
    long now = System.currentTimeMillis();
    long hb = figures.heartbeats();
    long[] ops = figures.operationsClosed();
    long f = fine.bucket(now);
    long c = coarse.bucket(now);
    fine.add(f, hb - lastHeartbeats, ops[0] - lastOps[0], ops[1] - lastOps[1], ops[2] - lastOps[2]);
    coarse.add(c, hb - lastHeartbeats, ops[0] - lastOps[0], ops[1] - lastOps[1], ops[2] - lastOps[2]);
    lastHeartbeats = hb;
    lastOps = ops;
    if (!io.meshplane.observe.OldestMember.isLocal(hz) || counting) {
      // not the counts' sampler, or the last counts query still runs (a slow database): this bucket's
      // counts are a gap, its other figures are published now
      publish(f, c);
      return;
    }
    counting = true;
    figures.meshCounts().onComplete(ar -> {
      counting = false;
      if (ar.succeeded()) {
        JsonObject n = ar.result();
        fine.counts(f, n.getLong("online", 0L), n.getLong("stale", 0L), n.getLong("pending", 0L));
        coarse.counts(c, n.getLong("online", 0L), n.getLong("stale", 0L), n.getLong("pending", 0L));
      } else {
        LOG.debug("overview series: node counts not sampled: {}", ar.cause().getMessage());
      }
      publish(f, c);
    });
  }


  private void publish(long f, long c) {
    // up to the newest bucket held (a late counts answer never hides a newer sample)
    long now = System.currentTimeMillis();
    byte[] fineBytes = fine.encode(Math.max(f, fine.bucket(now)));
    byte[] coarseBytes = coarse.encode(Math.max(c, coarse.bucket(now)));
    byte[] entry = new byte[4 + fineBytes.length + coarseBytes.length];
    java.nio.ByteBuffer.wrap(entry).putInt(fineBytes.length).put(fineBytes).put(coarseBytes);
    long ttl = Duration.ofHours(24).toMillis() + coarse.stepMs;
    rings.putAsync(member, entry, ttl, TimeUnit.MILLISECONDS).whenComplete((v, t) -> {
      if (t != null) LOG.debug("overview series not published: {}", t.getMessage());
      samples.incrementAndGet();
    });
  }

  /** Samples published by this replica (tests wait on it). */
  long samples() {
    return samples.get();
  }

  Window window(String name) {
    return windows.get(name);
  }

  /** The merged series of a window, ending at the newest bucket every replica has sampled. */
  Future<JsonObject> series(Window w) {
    long last = Math.floorDiv(System.currentTimeMillis(), w.stepMs()) - 1;
    JsonObject cached = merged.get(w.name());
    if (cached != null && cached.getLong("last_bucket") == last) return Future.succeededFuture(cached.getJsonObject("answer"));
    return vertx.executeBlocking(() -> {
      List<SeriesRing> all = new ArrayList<>();
      // in member-id order: the same replica's counts are taken for a bucket whichever replica merges
      TreeMap<String, byte[]> sorted = new TreeMap<>();
      for (Map.Entry<String, byte[]> e : rings.entrySet()) sorted.put(e.getKey(), e.getValue());
      for (byte[] e : sorted.values()) {
        SeriesRing r = decode(e, w.coarse());
        if (r != null && r.stepMs == w.stepMs()) all.add(r);
      }
      JsonObject answer = SeriesMerge.merge(w.name(), all, w.stepMs(), w.points(), last);
      merged.put(w.name(), new JsonObject().put("last_bucket", last).put("answer", answer));
      return answer;
    }, false);
  }

  /** The heartbeats per second of the whole mesh over the newest complete bucket (0 before the first samples). */
  Future<Double> clusterRate() {
    return series(windows.get("1h")).map(s -> {
      var hb = s.getJsonObject("series").getJsonArray("heartbeats_per_second");
      Object v = hb.isEmpty() ? null : hb.getValue(hb.size() - 1);
      return v instanceof Number n ? n.doubleValue() : 0.0;
    });
  }

  private static SeriesRing decode(byte[] entry, boolean coarse) {
    try {
      java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(entry);
      int fineLength = in.getInt();
      byte[] part = coarse ? new byte[entry.length - 4 - fineLength] : new byte[fineLength];
      in.position(coarse ? 4 + fineLength : 4);
      in.get(part);
      return SeriesRing.decode(part);
    } catch (RuntimeException e) {
      LOG.warn("an overview series entry cannot be read ({}); left out", e.getMessage());
      return null;
    }
  }

  void stop() {
    stopped = true;
    vertx.cancelTimer(timer);
  }
}
