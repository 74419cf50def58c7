package io.meshplane.heartbeat;

import com.hazelcast.config.CacheDeserializedValues;
import com.hazelcast.config.Config;
import com.hazelcast.config.InMemoryFormat;
import com.hazelcast.config.IndexConfig;
import com.hazelcast.config.IndexType;
import com.hazelcast.config.MapConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import com.hazelcast.map.impl.proxy.MapProxyImpl;
import com.hazelcast.query.Predicate;
import com.hazelcast.query.Predicates;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The cluster-wide live state of nodes: a Hazelcast IMap keyed by node id, one synchronous backup, a
 * hash index on the heartbeat's second (staleness scans and the write-behind's window ask for a
 * handful of seconds with {@code in(...)}; a sorted index keeps each second's entries ordered by key,
 * which cost a fifth of the heartbeat path's CPU in the benchmark; an index on the dirty mark would
 * cost ~50 bytes per node for what the time window already narrows). A heartbeat
 * accepted by any replica is visible to every replica at once. A second small map remembers which
 * nodes were declared stale, so each transition is recorded exactly once cluster-wide.
 */
public final class LiveState {
  public static final String MAP = "meshplane.nodes.live";
  /** The most ids read with one {@code getAll}; above, one {@code getAsync} per id (see {@link #getAll}). */
  static final int GET_ALL_MAX = 64;
  public static final String STALE_MAP = "meshplane.nodes.stale";
  public static final String CLUSTER_MAP = "meshplane.cluster";
  /** The member attribute that holds a replica's {@code cluster.advertise_url} (owner affinity, {@link LiveOwners}). */
  public static final String ADVERTISE_ATTRIBUTE = "meshplane.advertise_url";

  private final Vertx vertx;
  private final IMap<String, LiveNode> map;
  private final IMap<String, Long> stale;
  private final HazelcastInstance hz;

  public LiveState(Vertx vertx, HazelcastInstance hz) {
    this.vertx = vertx;
    this.hz = hz;
    this.map = hz.getMap(MAP);
    this.stale = hz.getMap(STALE_MAP);
    // A write whose backup did not acknowledge in time (hazelcast.operation.backup.timeout.millis,
    // 5 s), or whose primary's member left while it ran, fails instead of completing as if stored:
    // a heartbeat is answered 200 only once it is held by two members. Set before any use, on the
    // thread that starts the replica; Hazelcast reads the flag per call on this proxy instance.
    if (map instanceof MapProxyImpl<?, ?> proxy) proxy.setFailOnIndeterminateOperationState(true);
  }

  /** Adds the maps' configuration and the Compact serializer to a member's config (before it starts). */
  public static void configure(Config config) {
    config.getSerializationConfig().getCompactSerializationConfig()
        .addSerializer(new LiveNode.Serializer())
        .addSerializer(new FlushProcessors.SettleSerializer())
        .addSerializer(new FlushProcessors.ClearIfUnchangedSerializer());
    config.addMapConfig(new MapConfig(MAP)
        .setBackupCount(1)
        .setAsyncBackupCount(0)
        .setInMemoryFormat(InMemoryFormat.BINARY)
        // no deserialized copy per record (Hazelcast's default caches one when indexes are used):
        // 8 bytes less per entry, and queries on Compact data read the binary form anyway
        .setCacheDeserializedValues(CacheDeserializedValues.NEVER)
        .addIndexConfig(new IndexConfig(IndexType.HASH, LiveNode.HEARTBEAT_SECOND_FIELD)));
    config.addMapConfig(new MapConfig(STALE_MAP).setBackupCount(1).setAsyncBackupCount(0));
    config.addMapConfig(new MapConfig(CLUSTER_MAP).setBackupCount(2));
  }

  /** Entries whose heartbeat second is in [from, to], through the hash index (one lookup per second). */
  public static Predicate<String, LiveNode> heartbeatSecondsBetween(int from, int to) {
    if (to < from) return Predicates.alwaysFalse();
    Integer[] seconds = new Integer[to - from + 1];
    for (int i = 0; i < seconds.length; i++) seconds[i] = from + i;
    return Predicates.in(LiveNode.HEARTBEAT_SECOND_FIELD, seconds);
  }

  /**
   * {@link io.meshplane.node.LiveNodes#pkiTally}: four queries that run on the members over their own
   * entries (Compact fields read in place; counts and at most {@code max} keys travel). Online: a
   * heartbeat at or after {@code cutoffMillis}. Blocking.
   */
  public io.meshplane.node.LiveNodes.PkiTally pkiTally(String bundle, String issuer, long cutoffMillis, int max) {
    Predicate<String, LiveNode> reporting = Predicates.notEqual(LiveNode.PKI_BUNDLE_FIELD, "");
    Predicate<String, LiveNode> behind = issuer == null ? Predicates.notEqual(LiveNode.PKI_BUNDLE_FIELD, bundle)
        : Predicates.or(Predicates.notEqual(LiveNode.PKI_BUNDLE_FIELD, bundle), Predicates.notEqual(LiveNode.PKI_ISSUER_FIELD, issuer));
    Predicate<String, LiveNode> online = Predicates.greaterEqual(LiveNode.HEARTBEAT_SECOND_FIELD, LiveNode.second(cutoffMillis));
    Predicate<String, LiveNode> stale = Predicates.lessThan(LiveNode.HEARTBEAT_SECOND_FIELD, LiveNode.second(cutoffMillis));
    long onlineCount = map.aggregate(com.hazelcast.aggregation.Aggregators.count(), Predicates.and(online, reporting));
    Predicate<String, LiveNode> onlineBehind = Predicates.and(online, reporting, behind);
    long behindCount = map.aggregate(com.hazelcast.aggregation.Aggregators.count(), onlineBehind);
    long staleBehind = map.aggregate(com.hazelcast.aggregation.Aggregators.count(), Predicates.and(stale, reporting, behind));
    java.util.List<String> holdouts = new java.util.ArrayList<>();
    if (behindCount > 0 && max > 0) {
      // the first page in key order: each member sends at most max keys
      holdouts.addAll(map.keySet(Predicates.pagingPredicate(onlineBehind, max)));
      java.util.Collections.sort(holdouts);
    }
    return new io.meshplane.node.LiveNodes.PkiTally(onlineCount, behindCount, staleBehind, java.util.List.copyOf(holdouts));
  }

  public HazelcastInstance hazelcast() {
    return hz;
  }

  public IMap<String, LiveNode> map() {
    return map;
  }

  public IMap<String, Long> staleMap() {
    return stale;
  }

  /**
   * When the cluster came up: set by the first member of a fresh cluster, kept while any member lives.
   * Blocking (called at start). Returns {@code {startedAt, thisMemberStartedTheCluster ? 1 : 0}}.
   */
  public long[] clusterStart(long now) {
    IMap<String, Long> cluster = hz.getMap(CLUSTER_MAP);
    Long existing = cluster.putIfAbsent("started_at", now);
    return existing == null ? new long[] {now, 1} : new long[] {existing, 0};
  }

  /**
   * Live entries of these nodes (absent = never heard of since the cluster came up), read on a worker
   * thread, never on the caller's event loop. Up to {@value #GET_ALL_MAX} ids in one {@code getAll};
   * more, one {@code getAsync} each, all issued at once, then gathered. Hazelcast 5.3's {@code getAll}
   * sends the whole key list to every partition it touches, and each filters it by hashing every key:
   * O(keys x partitions), 270,000 hashes for a page of 1,000 nodes, on the partition threads the
   * heartbeats write through. Per key it is linear: 5.2-7.9 ms of CPU for 1,000 keys against
   * 11.4-15.7 ms, at 100 keys about even (load-tests/RESULTS.md, LiveReadCost). The calls are issued
   * from the worker, not the event loop: issuing 1,000 invocations and deserializing their answers
   * there would put that cost on the thread that answers heartbeats.
   */
  public Future<Map<String, LiveNode>> getAll(Set<String> ids) {
    if (ids.isEmpty()) return Future.succeededFuture(Map.of());
    return vertx.executeBlocking(() -> ids.size() <= GET_ALL_MAX ? map.getAll(ids) : readEach(ids), false);
  }

  /** One {@code getAsync} per id, all in flight together; blocks until every one has answered. */
  private Map<String, LiveNode> readEach(Set<String> ids) {
    String[] keys = ids.toArray(new String[0]);
    @SuppressWarnings("unchecked")
    CompletableFuture<LiveNode>[] reads = new CompletableFuture[keys.length];
    for (int i = 0; i < keys.length; i++) reads[i] = map.getAsync(keys[i]).toCompletableFuture();
    Map<String, LiveNode> out = new HashMap<>(keys.length * 2);
    for (int i = 0; i < keys.length; i++) {
      LiveNode n = reads[i].join();
      if (n != null) out.put(keys[i], n);
    }
    return out;
  }

  public Future<LiveNode> get(String id) {
    return Future.fromCompletionStage(map.getAsync(id), vertx.getOrCreateContext());
  }

  /** Forgets a deprovisioned node. */
  public Future<Void> remove(String id) {
    return vertx.executeBlocking(() -> {
      map.delete(id);
      stale.delete(id);
      return null;
    }, false);
  }
}
