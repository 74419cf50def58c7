package io.meshplane.waf;

import io.meshplane.common.Refusal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The WAF's front door: a traffic-policy document ({@link WafDocument}) compiled into a {@link Policy},
 * and requests evaluated by it. The one evaluation both sides use: the coordinator to check a document
 * at PUT (its tests) and to preview it, the agent's edge to enforce it. Compiling and evaluating cost CPU
 * that grows with the document and the request: callers run them off every event loop, on a bounded
 * pool.
 */
public final class Waf {
  private Waf() {}

  /** How many bytes of a body the WAF reads: an edge buffers at most this much before it decides. */
  public static final int BODY_PREFIX = RequestModel.BODY_PREFIX;

  /**
   * The probe nonce of a policy version: a request carrying it in {@link #PROBE_HEADER} is refused by
   * the edge enforcing that version (a rule every version carries ahead of its own), which proves the
   * version is in the request path. Derived from the version's identity, so every replica and every
   * edge computes the same one; knowing it lets a client do no more than be refused.
   */
  public static String probeNonce(String team, String environment, long version) {
    try {
      byte[] h = java.security.MessageDigest.getInstance("SHA-256")
          .digest(("meshplane-waf-probe\u0000" + team + "\u0000" + environment + "\u0000" + version).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return java.util.HexFormat.of().formatHex(h, 0, 16);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The header of a probe request ({@link #probeNonce}). */
  public static final String PROBE_HEADER = "x-meshplane-waf-probe";

  /**
   * One request as the WAF sees it: the method, the target as sent (path and query, percent-encoded),
   * the header fields in order, the client's IP literal (or empty), the first bytes of the body and its
   * whole size, the mesh identity of a mesh client (or empty).
   */
  public record Request(String method, String target, List<Map.Entry<String, String>> headers, String clientIp, byte[] body, long bodySize,
      String meshIdentity) {
    WafRequest internal() {
      return new WafRequest(method, target, headers, clientIp, body, bodySize, meshIdentity);
    }

    static Request of(WafRequest r) {
      return new Request(r.method(), r.target(), r.headers(), r.clientIp(), r.body(), r.bodySize(), r.meshIdentity());
    }
  }

  /**
   * What a policy decided: {@code outcome} {@code deny}, {@code allow} (an allow rule stopped the
   * evaluation) or {@code pass}; the status and title of a denial; the rule that stopped it (or empty);
   * every rule that matched, in order; the rules whose evaluation failed (counted as not matched); the
   * {@code log} rules that matched; whether the denial is a rate limit's (its bucket was empty).
   */
  public record Decision(String outcome, int status, String title, String rule, List<String> matched, List<String> errors, List<String> logged,
      boolean rateLimited) {
    static Decision of(WafDecision d) {
      List<String> logged = List.of();
      boolean limited = false;
      for (WafDecision.Hit h : d.hits()) {
        if ("log".equals(h.action())) {
          if (logged.isEmpty()) logged = new ArrayList<>(2);
          logged.add(h.ruleId());
        }
        limited |= h.limited();
      }
      return new Decision(d.outcome().name().toLowerCase(java.util.Locale.ROOT), d.status(), d.title(), d.ruleId(), d.matchedIds(), d.errors(),
          logged, limited);
    }

    public boolean denied() {
      return "deny".equals(outcome);
    }
  }

  /**
   * Where an edge's {@code rate_limit} rules count: token buckets in memory, at most {@code maxKeys}
   * (rule, key) pairs (the least recently used forgotten past that). Kept across policy versions, so a
   * reload does not refill every bucket. Thread-safe.
   */
  public static final class Limiter {
    private final RateLimiter buckets;

    private Limiter(RateLimiter buckets) {
      this.buckets = buckets;
    }
  }

  /** A {@link Limiter} of at most {@code maxKeys} buckets. */
  public static Limiter limiter(int maxKeys) {
    return new Limiter(new TokenBucketLimiter(maxKeys));
  }

  /** A sample request of a preview, with the ingress route it came through (null: none, the policy's own overrides). */
  public record Sample(Request request, String route) {}

  /** One test of a document and how it went: {@code passed} when the decision is the one expected (and by the rule named, if any). */
  public record TestResult(String name, String expect, String rule, Decision got, boolean passed) {}

  /** A compiled document: immutable, shared by any number of threads. */
  public static final class Policy {
    private final String mode;
    private final WafProgram base;
    private final Map<String, WafProgram> byRoute;
    private final List<WafDocument.Fixture> tests;
    private final int customRules;
    private final boolean managed;

    Policy(String mode, WafProgram base, Map<String, WafProgram> byRoute, List<WafDocument.Fixture> tests, int customRules, boolean managed) {
      this.mode = mode;
      this.base = base;
      this.byRoute = Map.copyOf(byRoute);
      this.tests = tests;
      this.customRules = customRules;
      this.managed = managed;
    }

    /** {@code enforce}, or {@code shadow}: decisions are reported, never applied. */
    public String mode() {
      return mode;
    }

    /** The worst-case cost in steps of the costliest program (the policy's own or a route's): what one request can cost at most. */
    public long worstCaseCost() {
      long max = base.worstCaseCost();
      for (WafProgram p : byRoute.values()) max = Math.max(max, p.worstCaseCost());
      return max;
    }

    public int customRules() {
      return customRules;
    }

    /** Whether the managed set applies (on the policy's own overrides; routes with overrides always apply it). */
    public boolean managed() {
      return managed;
    }

    public int tests() {
      return tests.size();
    }

    /** The decision for a request through {@code route} (null or a route without overrides: the policy's own), with no rate limiting. */
    public Decision evaluate(Request request, String route) {
      return Decision.of(program(route).evaluate(request.internal(), RateLimiter.NONE));
    }

    /** The decision at an edge: as {@link #evaluate}, the {@code rate_limit} rules counting in {@code limiter}. */
    public Decision enforce(Request request, String route, Limiter limiter) {
      return Decision.of(program(route).evaluate(request.internal(), limiter.buckets));
    }

    private WafProgram program(String route) {
      WafProgram p = route == null ? null : byRoute.get(route);
      return p == null ? base : p;
    }

    /** Runs the document's tests. */
    public List<TestResult> test() {
      List<TestResult> out = new ArrayList<>(tests.size());
      for (WafDocument.Fixture f : tests) {
        WafDecision d = program(f.route()).evaluate(f.request(), RateLimiter.NONE);
        String outcome = d.outcome().name().toLowerCase(java.util.Locale.ROOT);
        boolean byRule = f.rule() == null || ("pass".equals(f.expect()) ? d.matchedIds().contains(f.rule()) : f.rule().equals(d.ruleId()));
        out.add(new TestResult(f.name(), f.expect(), f.rule(), Decision.of(d), outcome.equals(f.expect()) && byRule));
      }
      return out;
    }
  }

  /**
   * Parses and compiles a traffic-policy document, or throws a {@link Refusal} naming every fault
   * ({@code rules[2].expression}, {@code managed.disable}, {@code tests[0].request.target}, ...). The
   * managed set (when the document applies it) follows the custom rules; each route with its own
   * overrides gets its own program. Its tests are not run here ({@link Policy#test()}).
   */
  public static Policy compile(String document) {
    WafDocument.Parsed d = WafDocument.parse(document);
    WafProgram base = WafCompiler.compile(withManaged(d.rules(), d.managed()));
    Map<String, WafProgram> byRoute = new LinkedHashMap<>();
    for (Map.Entry<String, ManagedRules.Overrides> e : d.routes().entrySet()) {
      byRoute.put(e.getKey(), WafCompiler.compile(withManaged(d.rules(), e.getValue())));
    }
    return new Policy(d.mode(), base, byRoute, d.tests(), d.rules().size(), d.managed() != null);
  }

  private static List<WafRule> withManaged(List<WafRule> custom, ManagedRules.Overrides o) {
    if (o == null) return custom;
    List<WafRule> all = new ArrayList<>(custom);
    List<String> ids = custom.stream().map(WafRule::id).toList();
    for (WafRule r : ManagedRules.select(o)) {
      if (ids.contains(r.id())) throw Refusal.invalid("rules", "rule " + r.id() + ": the id is a managed rule's (mp-…); choose another");
      all.add(r);
    }
    return all;
  }

  /** A preview's samples: a JSON list of requests as a test gives them (at most {@code max}); a refusal names {@code samples[i]…}. */
  public static List<Sample> samples(String json, int max) {
    Object parsed;
    try {
      parsed = BoundedJson.parse(json, 8, 200_000, null);
    } catch (IllegalArgumentException e) {
      throw Refusal.invalid("samples", e.getMessage());
    }
    if (!(parsed instanceof List<?> list)) throw Refusal.invalid("samples", "must be a list of requests");
    if (list.size() > max) throw Refusal.invalid("samples", "at most " + max + " samples");
    List<Refusal.FieldError> errors = new ArrayList<>();
    List<Sample> out = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      Object[] r = WafDocument.request("samples[" + i + "]", list.get(i), errors);
      if (r[0] != null) out.add(new Sample(Request.of((WafRequest) r[0]), (String) r[1]));
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
    return out;
  }
}
