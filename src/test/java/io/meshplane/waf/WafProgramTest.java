package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Evaluation order and actions, as an edge applying a policy relies on them. */
class WafProgramTest {
  private static final WafRule.Action DENY = new WafRule.Deny(403, "Forbidden here");

  private static WafProgram compile(WafRule... rules) {
    return WafCompiler.compile(List.of(rules));
  }

  @Test
  void theFirstAllowOrDenyStopsAndLogsBeforeItAreRecorded() {
    WafProgram p = compile(
        new WafRule("log-search", "'q' in request.query", new WafRule.Log()),
        new WafRule("trusted", "ip_in(request.client_ip, '192.0.2.0/24') && request.path_normalized.startsWith('/internal')", new WafRule.Allow()),
        new WafRule("no-internal", "request.path_normalized.startsWith('/internal')", DENY),
        new WafRule("never-reached-after-deny", "true", new WafRule.Log()));
    WafDecision allowed = p.evaluate(Corpus.get("/internal/x?q=1"), RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.ALLOW, allowed.outcome());
    assertEquals(List.of("log-search", "trusted"), allowed.matchedIds());
    WafRequest outsider = new WafRequest("GET", "/public/..//internal/x", Corpus.headers(), "198.51.100.1", new byte[0], 0, "");
    WafDecision denied = p.evaluate(outsider, RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.DENY, denied.outcome());
    assertEquals(403, denied.status());
    assertEquals("Forbidden here", denied.title());
    assertEquals("no-internal", denied.ruleId());
    assertEquals(List.of("no-internal"), denied.matchedIds(), "the dot segments do not hide the path");
    WafDecision passed = p.evaluate(Corpus.get("/public?x=1"), RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.PASS, passed.outcome());
    assertEquals(List.of("never-reached-after-deny"), passed.matchedIds());
  }

  @Test
  void aFailingRuleCountsAsNotMatchedAndIsReported() {
    WafProgram p = compile(new WafRule("needs-header", "request.headers['x-team'][0] == 'red'", DENY),
        new WafRule("after", "true", new WafRule.Log()));
    WafDecision d = p.evaluate(Corpus.get("/"), RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.PASS, d.outcome());
    assertEquals(1, d.errors().size());
    assertTrue(d.errors().get(0).startsWith("needs-header: "), d.errors().toString());
    assertEquals(WafDecision.Outcome.DENY, p.evaluate(Corpus.get("/", "X-Team", "red"), RateLimiter.NONE).outcome());
  }

  @Test
  void rateLimitsCountPerKeyAndRefuseWith429() {
    AtomicLong now = new AtomicLong(0);
    TokenBucketLimiter limiter = new TokenBucketLimiter(1_000, now::get);
    WafProgram p = compile(new WafRule("per-ip", "request.path_normalized.startsWith('/api')",
        new WafRule.RateLimit("request.client_ip", Duration.ofSeconds(10), 3)));
    WafRequest a = new WafRequest("GET", "/api/x", Corpus.headers(), "192.0.2.1", new byte[0], 0, "");
    WafRequest b = new WafRequest("GET", "/api/x", Corpus.headers(), "192.0.2.2", new byte[0], 0, "");
    for (int i = 0; i < 3; i++) assertEquals(WafDecision.Outcome.PASS, p.evaluate(a, limiter).outcome());
    WafDecision over = p.evaluate(a, limiter);
    assertEquals(WafDecision.Outcome.DENY, over.outcome());
    assertEquals(429, over.status());
    assertTrue(over.hits().get(0).limited());
    assertEquals(WafDecision.Outcome.PASS, p.evaluate(b, limiter).outcome(), "another key has its own bucket");
    assertEquals(WafDecision.Outcome.PASS, p.evaluate(Corpus.get("/other"), limiter).outcome(), "not matched: not counted");
    now.addAndGet(Duration.ofSeconds(4).toNanos()); // 1.2 tokens back
    assertEquals(WafDecision.Outcome.PASS, p.evaluate(a, limiter).outcome());
    assertEquals(WafDecision.Outcome.DENY, p.evaluate(a, limiter).outcome());
  }

  @Test
  void theLimiterKeepsABoundedNumberOfKeys() {
    TokenBucketLimiter limiter = new TokenBucketLimiter(100, () -> 0L);
    for (int i = 0; i < 10_000; i++) assertTrue(limiter.tryAcquire("r", "k" + i, 1, Duration.ofMinutes(1)));
    assertEquals(100, limiter.size());
    assertFalse(limiter.tryAcquire("r", "k9999", 1, Duration.ofMinutes(1)), "the recent keys are still counted");
  }

  @Test
  void jsonBodiesHeadersAndHelpersInExpressions() {
    WafProgram p = compile(
        new WafRule("admin-role", "request.body_json != null && request.body_json.role == 'admin'", DENY),
        new WafRule("ua", "'user-agent' in request.headers && request.headers['user-agent'].exists(u, u.lower().contains('badbot'))", DENY),
        new WafRule("mesh-only", "request.path_normalized.startsWith('/mesh') && request.mesh_identity == ''", DENY));
    assertEquals("admin-role", p.evaluate(Corpus.post("/u", "application/json", "{\"role\": \"admin\"}"), RateLimiter.NONE).ruleId());
    assertEquals(WafDecision.Outcome.PASS, p.evaluate(Corpus.post("/u", "application/json", "{\"role\": \"user\"}"), RateLimiter.NONE).outcome());
    assertEquals("ua", p.evaluate(Corpus.get("/", "User-Agent", "Mozilla BadBot/2"), RateLimiter.NONE).ruleId());
    assertEquals("mesh-only", p.evaluate(Corpus.get("/mesh/x"), RateLimiter.NONE).ruleId());
    WafRequest meshCaller = new WafRequest("GET", "/mesh/x", Corpus.headers(), "100.64.0.9", new byte[0], 0, "nd_billing");
    assertEquals(WafDecision.Outcome.PASS, p.evaluate(meshCaller, RateLimiter.NONE).outcome());
  }

  @Test
  @Timeout(20)
  void regularExpressionsRunInLinearTime() {
    WafProgram p = compile(new WafRule("redos", "request.body_text.matches('^(a+)+$')", DENY));
    String evil = "a".repeat(RequestModel.BODY_PREFIX - 1) + "!";
    for (int i = 0; i < 20; i++) {
      assertEquals(WafDecision.Outcome.PASS, p.evaluate(Corpus.post("/", "text/plain", evil), RateLimiter.NONE).outcome());
    }
  }

  @Test
  void theRuntimeGuardStopsRunawayIteration() {
    // cheap by the cost bound (literal lists), but 110 x 110 iterations: over the guard's 10,000
    String list = "[" + String.join(",", java.util.stream.IntStream.range(0, 110).mapToObj(Integer::toString).toList()) + "]";
    WafProgram p = compile(new WafRule("loops", list + ".all(x, " + list + ".all(y, x != y + 1000))", DENY),
        new WafRule("after", "true", new WafRule.Log()));
    WafDecision d = p.evaluate(Corpus.get("/"), RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.PASS, d.outcome());
    assertEquals(List.of("after"), d.matchedIds());
    assertTrue(d.errors().get(0).startsWith("loops: "), d.errors().toString());
  }

  @Test
  void oneCompiledPolicyServesManyThreads() throws Exception {
    WafProgram p = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.paranoia(2)));
    List<Corpus.Sample> samples = new ArrayList<>(Corpus.load("attacks.jsonl"));
    samples.addAll(Corpus.load("benign.jsonl"));
    List<WafDecision.Outcome> expected = samples.stream().map(s -> p.evaluate(s.request(), RateLimiter.NONE).outcome()).toList();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Boolean>> runs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        runs.add(pool.submit(() -> {
          for (int round = 0; round < 3; round++) {
            for (int i = 0; i < samples.size(); i++) {
              if (p.evaluate(samples.get(i).request(), RateLimiter.NONE).outcome() != expected.get(i)) return false;
            }
          }
          return true;
        }));
      }
      for (Future<Boolean> f : runs) assertTrue(f.get());
    } finally {
      pool.shutdownNow();
    }
  }
}
