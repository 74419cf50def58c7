package io.meshplane.agent;

import io.meshplane.waf.Waf;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import io.vertx.core.json.JsonObject;
import java.util.ArrayDeque;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The traffic policy an ingress edge enforces (API.md §20, ARCHITECTURE.md "WAF: at the edge"): the
 * {@code waf} part of the coordinator's {@code ingress_routes} block, compiled by the same code as the
 * coordinator's ({@link Waf#compile}) on a one-thread worker, then swapped in whole (one reference: a
 * request in flight keeps the policy it was evaluated by), and requests evaluated on a two-thread
 * worker, never on the event loop. At most {@value #MAX_IN_FLIGHT} evaluations wait at once; past that
 * a request is refused 503 ({@code waf_busy}) rather than let through unchecked. An evaluation that fails
 * (a rule's error) is fail-open for that rule only: it counts as not matched, and is counted.
 *
 * <p>What the coordinator is told ({@link #writeReport}): the policy version applied, the enforced and
 * shadow versions, a compile error, the probe's result and the last {@value #SAMPLES} denied requests,
 * redacted ({@link WafSample}).
 */
final class EdgeWaf {
  private static final Logger LOG = LoggerFactory.getLogger(EdgeWaf.class);
  static final int MAX_IN_FLIGHT = 512;
  static final int SAMPLES = 5;
  /** Rate-limit buckets per edge (the least recently used forgotten past it): bounded memory under a flood of keys. */
  static final int LIMITER_KEYS = 100_000;

  /** One compiled version: its number, its probe nonce, the compiled policy. */
  record Part(long version, String probe, Waf.Policy policy) {}

  /** What is enforced: the block's version (what is acknowledged), the enforced part and the shadow part (either may be null). */
  record Held(String version, Part enforce, Part shadow) {
    static final Held NONE = new Held(null, null, null);

    boolean active() {
      return enforce != null || shadow != null;
    }
  }

  /** What one request got: the enforced decision (null: no enforced policy), the shadow one (null: none), the time and CPU it took. */
  record Verdict(Held held, Waf.Decision enforced, Waf.Decision shadow, long nanos, long cpuNanos) {}

  private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

  private final Vertx vertx;
  private final String tag;
  private final Runnable applied;
  private final WorkerExecutor compiler;
  private final WorkerExecutor evaluator;
  private final Waf.Limiter limiter = Waf.limiter(LIMITER_KEYS);
  private final Waf.Limiter shadowLimiter = Waf.limiter(LIMITER_KEYS);
  private volatile Held held = Held.NONE;
  /** The block version being compiled, or null (event loop only). */
  private String applying;
  /** A block that came while another compiled: compiled next (only the latest waits), so compiles never queue up. */
  private JsonObject waiting;
  /** Moves when the policy is dropped: a compile started before it does not bring it back. */
  private long drops;
  private String error;
  private final ArrayDeque<JsonObject> samples = new ArrayDeque<>(SAMPLES);
  private JsonObject probe;
  private int inFlight;
  /** Evaluation time: count, total nanoseconds, and counts per bucket of {@link WafTimes#BUCKETS}. */
  final WafTimes times = new WafTimes();

  /** @param applied run on the event loop when a version was applied or refused (the session beats at once to say so) */
  EdgeWaf(Vertx vertx, String tag, Runnable applied) {
    this.vertx = vertx;
    this.tag = tag;
    this.applied = applied;
    this.compiler = vertx.createSharedWorkerExecutor("meshplane-waf-compile", 1);
    this.evaluator = vertx.createSharedWorkerExecutor("meshplane-waf", 2);
  }

  Held held() {
    return held;
  }

  /**
   * Takes the {@code waf} member of a full {@code ingress_routes} block: null (the team+environment has
   * no traffic policy) drops the one held; an object with a new version is compiled off the event loop
   * and swapped in when done. A version that fails to compile leaves the one held in force (the
   * coordinator compiled it with the same code, so this is a defect, reported as {@code error}).
   */
  void apply(Object block) {
    if (!(block instanceof JsonObject w)) {
      waiting = null;
      drops++;
      if (held.version() != null) {
        held = Held.NONE;
        error = null;
        LOG.info("{} traffic policy removed: no policy for the routes' team and environment", tag);
        applied.run();
      }
      return;
    }
    String version = w.getValue("version") instanceof String v ? v : null;
    if (version == null || version.equals(held.version()) || version.equals(applying)) return;
    if (applying != null) {
      waiting = w; // one compile at a time: under a burst of versions only the latest is compiled next
      return;
    }
    applying = version;
    Held before = held;
    long dropsBefore = drops;
    JsonObject enforce = w.getJsonObject("enforce");
    JsonObject shadow = w.getJsonObject("shadow");
    compiler.<Held>executeBlocking(() -> new Held(version, part(enforce, before), part(shadow, before)), false).onComplete(ar -> {
      applying = null;
      if (drops != dropsBefore) return; // the policy was dropped while this compiled
      if (ar.succeeded()) {
        held = ar.result();
        error = null;
        LOG.info("{} traffic policy version {} applied: enforce {}, shadow {}", tag, version, v(held.enforce()), v(held.shadow()));
      } else {
        error = IngressCounters.reportable("version " + version + " not applied: " + ar.cause().getMessage());
        LOG.warn("{} traffic policy version {} not applied, {} stays in force: {}", tag, version, held.version(), ar.cause().getMessage());
      }
      JsonObject next = waiting;
      waiting = null;
      if (next != null) apply(next); // a later version came meanwhile: compiled now, announced when done
      if (applying == null) applied.run(); // nothing more to compile (the waiting block, if any, was this version)
    });
  }

  private static String v(Part p) {
    return p == null ? "none" : Long.toString(p.version());
  }

  /** A part of the block compiled, or the one already held for the same version (a new shadow leaves the enforced one as it is). */
  private static Part part(JsonObject p, Held before) {
    if (p == null) return null;
    long version = p.getLong("version");
    for (Part h : new Part[] {before.enforce(), before.shadow()}) {
      if (h != null && h.version() == version) return h;
    }
    return new Part(version, p.getString("probe"), Waf.compile(p.getJsonObject("policy").encode()));
  }

  /** Whether one more evaluation may wait; false: the edge answers 503 {@code waf_busy}. Event loop. */
  boolean admit() {
    if (inFlight >= MAX_IN_FLIGHT) return false;
    inFlight++;
    return true;
  }

  /** Evaluates {@code request} (admitted) through {@code route} by what is held now, on the WAF's workers; completes on the event loop. */
  Future<Verdict> evaluate(Waf.Request request, String route) {
    Held h = held;
    return evaluator.<Verdict>executeBlocking(() -> {
      long c0 = THREADS.getCurrentThreadCpuTime();
      long t0 = System.nanoTime();
      Waf.Decision e = h.enforce() == null ? null : h.enforce().policy().enforce(request, route, limiter);
      Waf.Decision s = h.shadow() == null ? null : h.shadow().policy().enforce(request, route, shadowLimiter);
      long t1 = System.nanoTime();
      return new Verdict(h, e, s, t1 - t0, c0 < 0 ? -1 : THREADS.getCurrentThreadCpuTime() - c0);
    }, false).andThen(ar -> {
      inFlight--;
      if (ar.succeeded()) times.record(ar.result().nanos(), ar.result().cpuNanos());
    });
  }

  /** Keeps a redacted sample of a denied request (the last {@value #SAMPLES}). Event loop. */
  void sample(JsonObject s) {
    if (samples.size() == SAMPLES) samples.removeFirst();
    samples.addLast(s);
  }

  /** The probe's result for {@code version}. Event loop. */
  void probed(String version, boolean passed, int status, String detail) {
    probe = new JsonObject().put("version", version).put("passed", passed).put("status", status).put("at", System.currentTimeMillis() / 1000)
        .put("detail", detail == null ? null : IngressCounters.reportable(detail));
  }

  /** The probe request's verdict: null when {@code nonce} is none of the held versions', else the part it names. */
  Part probeOf(String nonce) {
    Held h = held;
    if (nonce == null) return null;
    if (h.enforce() != null && nonce.equals(h.enforce().probe())) return h.enforce();
    if (h.shadow() != null && nonce.equals(h.shadow().probe())) return h.shadow();
    return null;
  }

  /** Appends {@code ,"waf":{…}} to the heartbeat's {@code ingress_routes} report, or nothing before a policy or an error. */
  void writeReport(StringBuilder sb) {
    Held h = held;
    if (h.version() == null && error == null) return;
    JsonObject w = new JsonObject().put("version", h.version()).put("enforce", h.enforce() == null ? null : h.enforce().version())
        .put("shadow", h.shadow() == null ? null : h.shadow().version()).put("error", error).put("probe", probe)
        .put("samples", new io.vertx.core.json.JsonArray(new java.util.ArrayList<>(samples)));
    sb.append(",\"waf\":").append(w.encode());
  }

  /** For /info and the metrics: the versions held and the error. */
  JsonObject info() {
    Held h = held;
    return new JsonObject().put("version", h.version()).put("enforce", h.enforce() == null ? null : h.enforce().version())
        .put("shadow", h.shadow() == null ? null : h.shadow().version()).put("error", error).put("probe", probe);
  }

  /** Counts per rule for the report, bounded (see {@link IngressCounters.Waf}). */
  static void count(Map<String, Long> byRule, String rule) {
    if (byRule.containsKey(rule) || byRule.size() < IngressCounters.Waf.MAX_RULES) byRule.merge(rule, 1L, Long::sum);
  }

  void close() {
    compiler.close();
    evaluator.close();
  }
}
