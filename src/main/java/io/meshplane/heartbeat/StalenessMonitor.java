package io.meshplane.heartbeat;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.query.Predicates;
import io.meshplane.common.Ids;
import io.meshplane.changes.ChangeLog;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds nodes going stale and coming back (one per replica, a worker: its Hazelcast calls block). Each
 * replica scans only the entries it owns, through the heartbeat-time index, so detection scales out
 * with the cluster. A transition is claimed atomically on the stale map ({@code putIfAbsent} for
 * online→stale, {@code remove(key, value)} for stale→online) before it is recorded, so it is recorded
 * exactly once cluster-wide even if partitions migrate during a scan. Nothing is declared stale within
 * {@code stale_after} of the cluster's start.
 */
final class StalenessMonitor extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(StalenessMonitor.class);

  private record Transition(String eventId, long at, String type, String nodeId, long lastHeartbeat) {}

  private final HazelcastInstance hz;
  private final IMap<String, LiveNode> map;
  private final IMap<String, Long> stale;
  private final Staleness staleness;
  private final LiveRepository nodes;
  private final ChangeLog.Feed changes;
  private final MeshMetrics metrics;
  private final long periodMs;
  private final List<Transition> unrecorded = new ArrayList<>();
  private long timer = -1;
  private boolean running;
  private long lastPendingCount;
  private int scannedUpTo = Integer.MIN_VALUE;
  private long lastFullScan;
  /** Ticks completed (scan and record step), read by tests. */
  private final java.util.concurrent.atomic.AtomicLong scans = new java.util.concurrent.atomic.AtomicLong();
  /** A full scan now and then catches entries that arrived with old heartbeats (migrations, seeding). */
  static final long FULL_SCAN_EVERY_MS = 30_000;

  public StalenessMonitor(HazelcastInstance hz, LiveState live, Staleness staleness, LiveRepository nodes, ChangeLog.Feed changes,
      MeshMetrics metrics) {
    this.changes = changes;
    this.hz = hz;
    this.map = live.map();
    this.stale = live.staleMap();
    this.staleness = staleness;
    this.nodes = nodes;
    this.metrics = metrics;
    this.periodMs = Math.max(50, Math.min(1000, staleness.staleAfterMs() / 4));
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(periodMs, id -> tick());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    return Future.succeededFuture();
  }

  private void tick() {
    if (running) return;
    running = true;
    try {
      scan(System.currentTimeMillis());
    } catch (RuntimeException e) {
      LOG.warn("staleness scan failed: {}", e.getMessage());
    }
    Future<Void> recorded;
    try {
      recorded = record();
    } catch (RuntimeException e) {
      // (the cluster's member list while this member stops, say): never leave `running` set
      LOG.warn("staleness events not recorded yet: {}", e.toString());
      recorded = Future.succeededFuture();
    }
    recorded.onComplete(ar -> {
      running = false;
      scans.incrementAndGet();
    });
  }

  long scans() {
    return scans.get();
  }

  void scan(long now) {
    // transitions claimed here are recorded (in the next record step) even if a Hazelcast call fails
    // halfway through the scan: the claim makes this replica the only one that will ever report them
    claim(now);
    long owned = map.getLocalMapStats().getOwnedEntryCount();
    long staleOwned = stale.getLocalMapStats().getOwnedEntryCount();
    metrics.setNodeCount(MeshMetrics.NodeStatus.STALE, staleOwned);
    metrics.setNodeCount(MeshMetrics.NodeStatus.ONLINE, Math.max(0, owned - staleOwned));
  }

  /** Claims this replica's stale and online transitions (exactly once cluster-wide), as transitions to record. */
  private void claim(long now) {
    if (!staleness.inGrace(now)) {
      // By second through the index (a superset at the boundary), then exactly by millisecond below.
      // Usually only the seconds that crossed the cutoff since the last scan; all of them on a full scan.
      int cutoff = LiveNode.second(staleness.cutoff(now));
      boolean full = scannedUpTo == Integer.MIN_VALUE || now - lastFullScan >= FULL_SCAN_EVERY_MS;
      // (a full scan reads every owned entry: the hash index does not serve ranges; it runs every 30 s)
      Set<String> old = map.localKeySet(full
          ? Predicates.lessEqual(LiveNode.HEARTBEAT_SECOND_FIELD, cutoff)
          : LiveState.heartbeatSecondsBetween(Math.max(scannedUpTo - 2, cutoff - 120), cutoff));
      if (full) lastFullScan = now;
      scannedUpTo = cutoff;
      for (String id : old) {
        if (stale.containsKey(id)) continue;
        LiveNode n = map.get(id);
        if (n == null || !staleness.isStale(n.heartbeatAt(), now)) continue;
        if (stale.putIfAbsent(id, n.heartbeatAt()) == null) {
          unrecorded.add(new Transition(Ids.next("ev"), now, "node.stale", id, n.heartbeatAt()));
          metrics.staleTransitions.increment();
        }
      }
    }
    for (String id : stale.localKeySet()) {
      LiveNode n = map.get(id);
      Long marked = stale.get(id);
      if (marked == null) continue;
      if (n == null) {
        stale.remove(id, marked);
      } else if (!staleness.isStale(n.heartbeatAt(), now) && stale.remove(id, marked)) {
        unrecorded.add(new Transition(Ids.next("ev"), now, "node.online", id, n.heartbeatAt()));
      }
    }
  }

  /** Writes the claimed transitions; kept for the next tick when PostgreSQL does not take them. */
  private Future<Void> record() {
    Future<Void> pending = countPendingIfOldest();
    if (unrecorded.isEmpty()) return pending;
    List<Transition> batch = new ArrayList<>(unrecorded);
    int n = batch.size();
    String[] ids = new String[n];
    Long[] at = new Long[n];
    String[] types = new String[n];
    String[] nodeIds = new String[n];
    Long[] hb = new Long[n];
    for (int i = 0; i < n; i++) {
      Transition t = batch.get(i);
      ids[i] = t.eventId();
      at[i] = t.at();
      types[i] = t.type();
      nodeIds[i] = t.nodeId();
      hb[i] = t.lastHeartbeat();
    }
    return nodes.insertEvents(ids, at, types, nodeIds, hb)
        .onSuccess(logged -> {
          unrecorded.subList(0, n).clear();
          // peers learn of online and stale from the change-log entry: every replica reads it now
          if (logged) changes.announce();
        })
        .onFailure(t -> LOG.warn("{} node state events not recorded yet, will retry: {}", n, t.getMessage()))
        .<Void>mapEmpty()
        .recover(t -> Future.succeededFuture());
  }

  /** Nodes never heard from live only in PostgreSQL; the oldest member alone reports them (no double counting). */
  private Future<Void> countPendingIfOldest() {
    Member oldest = hz.getCluster().getMembers().iterator().next();
    if (!oldest.localMember()) {
      metrics.setNodeCount(MeshMetrics.NodeStatus.PENDING, 0);
      return Future.succeededFuture();
    }
    long now = System.currentTimeMillis();
    if (now - lastPendingCount < 5000) return Future.succeededFuture();
    lastPendingCount = now;
    return nodes.countPending().onSuccess(c -> metrics.setNodeCount(MeshMetrics.NodeStatus.PENDING, c))
        .<Void>mapEmpty().recover(t -> Future.succeededFuture());
  }
}
