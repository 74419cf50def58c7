package io.meshplane.ingress;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.node.LiveNodes;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ingress gauges (docs/OPERATIONS.md, "Metrics"), sampled every {@code metrics.gauge_interval} (15 s) by the cluster's
 * <b>oldest member only</b>, as MeshCA's are: the nodes that serve routes (from {@link IngressBook},
 * listed again only when the book's nodes or routes changed) and their live entries in one bulk read.
 * Cost per interval: O(ingress nodes) (the listing, when due, O(nodes of the mesh) in memory), on a
 * worker, never an event loop. The other replicas report 0 and no certificate expiry, so the maximum
 * (and the sum) across replicas is the mesh's figure.
 *
 * <p>An ingress node is <i>offline</i> when its last heartbeat is older than the staleness cutoff (or
 * the cluster has none), else <i>current</i> or <i>behind</i> by {@code ingress_sync}. The config lag
 * is the longest a node now behind has been behind: from the change that made its version current (the
 * book's view) when the sampler first sees it behind, kept until it is current again; a sampler that
 * takes over (a new oldest member) starts from that change, so a node behind several changes may be
 * reported as behind since the last one.
 */
final class IngressGauges {
  private static final Logger LOG = LoggerFactory.getLogger(IngressGauges.class);
  private final Duration interval;
  static final List<String> SYNC = List.of("current", "behind", "offline");

  /** WAF decision outcomes summed over the ingress nodes' reports (bounded: these keys only). */
  static final List<String> OUTCOMES = List.of("evaluated", "denied", "rate_limited", "logged", "would_deny", "errors", "busy");

  /** One sample's figures; {@code waf*}: the nodes whose team+environment has a traffic policy, by {@code waf_sync}. */
  record Figures(Map<String, Long> nodes, long behindSinceMs, long minNotAfterS, long acmeFailingRoutes, long meshcaFailingRoutes,
      Map<String, Long> wafNodes, long wafBehindSinceMs, long wafProbeFailing, Map<String, Long> wafDecisions) {
    static final Figures NONE = new Figures(Map.of(), -1, Long.MAX_VALUE, 0, 0, Map.of(), -1, 0, Map.of());
  }

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final IngressBook book;
  private final Supplier<LiveNodes> live;
  private final Map<String, AtomicLong> nodes = new HashMap<>();
  /** The earliest behind-since of a node behind now (epoch ms); -1: none behind. */
  private final AtomicLong behindSinceMs = new AtomicLong(-1);
  private final AtomicLong acmeFailing = new AtomicLong();
  private final AtomicLong meshcaFailing = new AtomicLong();
  private final AtomicLong minNotAfterS = new AtomicLong(Long.MAX_VALUE);
  private final MultiGauge expiry;
  private boolean expiryShown;
  private final Map<String, AtomicLong> wafNodes = new HashMap<>();
  private final AtomicLong wafBehindSinceMs = new AtomicLong(-1);
  private final AtomicLong wafProbeFailing = new AtomicLong();
  private final Map<String, AtomicLong> wafDecisions = new HashMap<>();
  private final Map<String, Long> wafBehindSince = new java.util.concurrent.ConcurrentHashMap<>();

  // the sampler's (one run at a time: sampling)
  private final Map<String, Long> behindSince = new java.util.concurrent.ConcurrentHashMap<>();
  private List<String> serving = List.of();
  private long servingGeneration = -1;
  private boolean sampling;
  private long timer = -1;
  /** Ticks of this replica's sampler, and the samples it took (tests wait on them). */
  private final AtomicLong ticks = new AtomicLong();
  private final AtomicLong samples = new AtomicLong();

  /** A node's {@code waf_sync} from its report ({@link IngressModule#wafSync}). */
  private final java.util.function.BiFunction<String, String, JsonObject> wafSync;

  IngressGauges(Vertx vertx, HazelcastInstance hz, MeterRegistry registry, IngressBook book, Supplier<LiveNodes> live,
      java.util.function.BiFunction<String, String, JsonObject> wafSync, Duration interval) {
    this.interval = interval;
    this.wafSync = wafSync;
    this.vertx = vertx;
    this.hz = hz;
    this.book = book;
    this.live = live;
    family(registry, "mesh.ingress.nodes", "sync", SYNC, nodes, "Nodes that serve ingress routes, by sync (current: acknowledged the current "
        + "routes version, behind, offline: stale or never heard of); sampled by the oldest replica only, 0 on the others");
    Gauge.builder("mesh.ingress.config.lag.seconds", behindSinceMs, v -> v.get() < 0 ? 0 : Math.max(0, System.currentTimeMillis() - v.get()) / 1000.0)
        .description("The longest time an online ingress node has been behind the current routes version (0: none behind); oldest replica only")
        .register(registry);
    Gauge.builder("mesh.ingress.acme.failing.routes", acmeFailing, AtomicLong::doubleValue)
        .description("Routes whose last ACME attempt failed on an online ingress node (their acme_error); oldest replica only")
        .register(registry);
    Gauge.builder("mesh.ingress.meshca.failing.routes", meshcaFailing, AtomicLong::doubleValue)
        .description("Routes whose last MeshCA hostname-certificate request failed on an online ingress node (their meshca_error); oldest replica only")
        .register(registry);
    family(registry, "mesh.waf.nodes", "sync", SYNC, wafNodes, "Ingress nodes of a team and environment with a traffic policy, by sync "
        + "(current: reported enforcing the current policy version, behind, offline); oldest replica only");
    Gauge.builder("mesh.waf.apply.lag.seconds", wafBehindSinceMs, v -> v.get() < 0 ? 0 : Math.max(0, System.currentTimeMillis() - v.get()) / 1000.0)
        .description("The longest time an online ingress node has been behind its current traffic policy version (0: none); oldest replica only")
        .register(registry);
    Gauge.builder("mesh.waf.probe.failing.nodes", wafProbeFailing, AtomicLong::doubleValue)
        .description("Online ingress nodes whose probe of the current traffic policy version did not pass (failed, stale or none); oldest replica only")
        .register(registry);
    family(registry, "mesh.waf.decisions", "outcome", OUTCOMES, wafDecisions, "WAF decisions by outcome, summed over the online ingress "
        + "nodes' last reports (each counted since its agent started; would_deny: the shadow version's); oldest replica only");
    this.expiry = MultiGauge.builder("mesh.ingress.certificate.expiry.seconds")
        .description("Seconds until the first ACME certificate served by an online ingress node expires; on the oldest replica, once one is reported")
        .register(registry);
  }

  /** One gauge per value of {@code tag}, each reading its own cell of {@code cells}. */
  private static void family(MeterRegistry registry, String name, String tag, List<String> values, Map<String, AtomicLong> cells, String help) {
    for (String value : values) {
      AtomicLong v = new AtomicLong();
      cells.put(value, v);
      Gauge.builder(name, v, AtomicLong::doubleValue).description(help).tag(tag, value).register(registry);
    }
  }

  void start() {
    sample();
    timer = vertx.setPeriodic(interval.toMillis(), t -> sample());
  }

  void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
  }

  private void sample() {
    ticks.incrementAndGet();
    if (!io.meshplane.observe.OldestMember.isLocal(hz)) {
      if (!sampling) {
        behindSince.clear();
        wafBehindSince.clear();
      }
      show(Figures.NONE);
      return;
    }
    if (sampling) return; // the last sample still runs: this interval keeps its figures
    LiveNodes liveNodes = live.get();
    if (liveNodes == null) return;
    sampling = true;
    long generation = book.generation();
    Future<List<String>> ids = generation == servingGeneration ? Future.succeededFuture(serving)
        : vertx.executeBlocking(book::servingNodes, false).onSuccess(l -> {
          serving = List.copyOf(l);
          servingGeneration = generation;
        });
    ids.compose(l -> liveNodes.getAll(Set.copyOf(l)).compose(all -> vertx.executeBlocking(() -> figures(l, all, liveNodes), false)))
        .onComplete(ar -> {
          sampling = false;
          if (ar.failed()) {
            LOG.debug("ingress gauges not sampled: {}", ar.cause().getMessage());
            return;
          }
          samples.incrementAndGet();
          show(ar.result());
        });
  }

  /** The figures of the serving nodes from their live entries (a worker; {@link #behindSince} is the sampler's, one run at a time). */
  private Figures figures(List<String> ids, Map<String, LiveNodes.Live> all, LiveNodes liveNodes) {
    long now = System.currentTimeMillis();
    long cutoff = liveNodes.staleCutoff(now);
    Map<String, Long> count = new HashMap<>();
    long earliest = -1;
    long minNotAfter = Long.MAX_VALUE;
    Set<String> failing = new HashSet<>();
    Set<String> meshcaFailingIds = new HashSet<>();
    Set<String> seen = new HashSet<>(ids);
    behindSince.keySet().retainAll(seen);
    wafBehindSince.keySet().retainAll(seen);
    Map<String, Long> wafCount = new HashMap<>();
    Map<String, Long> decisions = new HashMap<>();
    long wafEarliest = -1;
    long probeFailing = 0;
    for (String id : ids) {
      LiveNodes.Live l = all.get(id);
      if (l == null || l.heartbeatAt() < cutoff) {
        count.merge("offline", 1L, Long::sum);
        behindSince.remove(id);
        wafBehindSince.remove(id);
        if (book.wafVersions(id, null).getValue("current") != null) wafCount.merge("offline", 1L, Long::sum);
        continue;
      }
      JsonObject waf = wafSync.apply(id, l.wafReport());
      if (!"none".equals(waf.getString("state"))) {
        boolean current = "current".equals(waf.getString("state"));
        wafCount.merge(current ? "current" : "behind", 1L, Long::sum);
        if (current) {
          wafBehindSince.remove(id);
        } else {
          long since = wafBehindSince.computeIfAbsent(id, book::currentSince);
          wafEarliest = wafEarliest < 0 ? since : Math.min(wafEarliest, since);
        }
        if (waf.getValue("current") != null && !"passed".equals(waf.getJsonObject("probe").getString("state"))) probeFailing++;
      }
      String state = book.sync(id, l.ingressVersion()).getString("state");
      if ("current".equals(state)) {
        count.merge("current", 1L, Long::sum);
        behindSince.remove(id);
      } else {
        count.merge("behind", 1L, Long::sum);
        long since = behindSince.computeIfAbsent(id, book::currentSince);
        earliest = earliest < 0 ? since : Math.min(earliest, since);
      }
      if (l.ingressStats() == null || l.ingressStats().isEmpty()) continue;
      JsonObject stats = new JsonObject(l.ingressStats());
      for (Map.Entry<String, Object> e : stats) {
        if (!(e.getValue() instanceof JsonObject r)) continue;
        if (r.getValue("not_after") instanceof Number n) minNotAfter = Math.min(minNotAfter, n.longValue());
        if (r.getValue("acme_error") instanceof String) failing.add(e.getKey());
        if (r.getValue("meshca_error") instanceof String) meshcaFailingIds.add(e.getKey());
        if (r.getValue("waf") instanceof JsonObject w) {
          for (String o : OUTCOMES) if (w.getValue(o) instanceof Number n) decisions.merge(o, n.longValue(), Long::sum);
        }
      }
    }
    return new Figures(count, earliest, minNotAfter, failing.size(), meshcaFailingIds.size(), wafCount, wafEarliest, probeFailing, decisions);
  }

  private void show(Figures f) {
    for (String s : SYNC) nodes.get(s).set(f.nodes().getOrDefault(s, 0L));
    behindSinceMs.set(f.behindSinceMs());
    acmeFailing.set(f.acmeFailingRoutes());
    meshcaFailing.set(f.meshcaFailingRoutes());
    for (String s : SYNC) wafNodes.get(s).set(f.wafNodes().getOrDefault(s, 0L));
    wafBehindSinceMs.set(f.wafBehindSinceMs());
    wafProbeFailing.set(f.wafProbeFailing());
    for (String o : OUTCOMES) wafDecisions.get(o).set(f.wafDecisions().getOrDefault(o, 0L));
    minNotAfterS.set(f.minNotAfterS());
    boolean any = f.minNotAfterS() != Long.MAX_VALUE;
    if (any != expiryShown) {
      expiry.register(any ? List.of(MultiGauge.Row.of(Tags.empty(), minNotAfterS,
          v -> v.get() == Long.MAX_VALUE ? Double.NaN : v.get() - System.currentTimeMillis() / 1000.0)) : List.of(), true);
      expiryShown = any;
    }
  }


  /** How many times this replica's sampler ran. */
  long ticks() {
    return ticks.get();
  }

  /** How many samples this replica took (the oldest member's only). */
  long samples() {
    return samples.get();
  }
}
