package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Refusal;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The managed rule set: its shape, per-route overrides, and its detection and false-positive rates on
 * the corpora of src/test/resources/waf (floors measured, see load-tests/RESULTS.md).
 */
class ManagedRulesTest {
  /** Floors and ceilings measured on the corpora (ARCHITECTURE.md "WAF"): a change that drops below fails. */
  static final double DETECTION_PL1 = 0.97;
  static final double DETECTION_PL2 = 0.99;
  static final double FALSE_POSITIVES_PL1 = 0.01;
  static final double FALSE_POSITIVES_PL2 = 0.02;

  @Test
  void everyRuleHasAnIdAClassALevelAndCompiles() {
    List<ManagedRules.Managed> rules = ManagedRules.shipped();
    assertTrue(rules.size() >= 25, "rules: " + rules.size());
    Set<String> classes = new HashSet<>();
    for (ManagedRules.Managed m : rules) {
      assertTrue(m.rule().id().matches("mp-[a-z]+-\\d{3}"), m.rule().id());
      assertTrue(m.paranoia() == 1 || m.paranoia() == 2, m.rule().id());
      classes.add(m.ruleClass());
    }
    assertTrue(classes.containsAll(Set.of("sqli", "xss", "traversal", "rfi", "scanner", "body")), classes.toString());
  }

  @Test
  void detectionAndFalsePositiveRatesStayWithinTheirFloors() {
    List<Corpus.Sample> attacks = Corpus.load("attacks.jsonl");
    List<Corpus.Sample> benign = Corpus.load("benign.jsonl");
    assertTrue(attacks.size() >= 300 && benign.size() >= 300, attacks.size() + " / " + benign.size());
    for (int level = 1; level <= 2; level++) {
      WafProgram p = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.paranoia(level)));
      Map<String, int[]> perClass = new TreeMap<>();
      int detected = 0;
      List<String> missed = new ArrayList<>();
      for (Corpus.Sample s : attacks) {
        WafDecision d = p.evaluate(s.request(), RateLimiter.NONE);
        boolean hit = d.outcome() == WafDecision.Outcome.DENY;
        int[] c = perClass.computeIfAbsent(s.cls(), k -> new int[2]);
        c[1]++;
        if (hit) {
          detected++;
          c[0]++;
        } else {
          missed.add(s.request().method() + " " + s.request().target() + " " + new String(s.request().body(), java.nio.charset.StandardCharsets.UTF_8));
        }
        assertEquals(List.of(), d.errors(), "no rule fails on " + s.request().target());
      }
      int falsePositives = 0;
      List<String> fps = new ArrayList<>();
      for (Corpus.Sample s : benign) {
        WafDecision d = p.evaluate(s.request(), RateLimiter.NONE);
        if (d.outcome() == WafDecision.Outcome.DENY) {
          falsePositives++;
          fps.add(d.ruleId() + " <- " + s.request().target() + " " + new String(s.request().body(), java.nio.charset.StandardCharsets.UTF_8));
        }
        assertEquals(List.of(), d.errors(), "no rule fails on " + s.request().target());
      }
      double detection = detected / (double) attacks.size();
      double fp = falsePositives / (double) benign.size();
      StringBuilder classes = new StringBuilder();
      perClass.forEach((k, v) -> classes.append(k).append(' ').append(v[0]).append('/').append(v[1]).append("  "));
      System.out.printf("paranoia %d: detection %d/%d = %.3f, false positives %d/%d = %.3f; %s%n", level, detected, attacks.size(), detection,
          falsePositives, benign.size(), fp, classes);
      missed.forEach(m -> System.out.println("  missed: " + m));
      fps.forEach(m -> System.out.println("  false positive: " + m));
      assertTrue(detection >= (level == 1 ? DETECTION_PL1 : DETECTION_PL2), "detection at paranoia " + level + ": " + detection);
      assertTrue(fp <= (level == 1 ? FALSE_POSITIVES_PL1 : FALSE_POSITIVES_PL2), "false positives at paranoia " + level + ": " + fp);
    }
  }

  @Test
  void aRouteCanDisableARuleChangeItsActionOrExcludeAParameter() {
    WafRequest search = Corpus.get("/search?q=union+select+all+the+things&page=2");
    WafProgram plain = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.DEFAULT));
    assertEquals("mp-sqli-001", plain.evaluate(search, RateLimiter.NONE).ruleId());

    WafProgram disabled = WafCompiler.compile(ManagedRules.select(new ManagedRules.Overrides(1, Set.of("mp-sqli-001"), Map.of(), Map.of())));
    assertEquals(WafDecision.Outcome.PASS, disabled.evaluate(search, RateLimiter.NONE).outcome());

    WafProgram watched = WafCompiler.compile(ManagedRules.select(new ManagedRules.Overrides(1, Set.of(), Map.of("mp-sqli-001", new WafRule.Log()), Map.of())));
    WafDecision d = watched.evaluate(search, RateLimiter.NONE);
    assertEquals(WafDecision.Outcome.PASS, d.outcome());
    assertEquals(List.of(new WafDecision.Hit("mp-sqli-001", "log", false)), d.hits());

    WafProgram excluded = WafCompiler.compile(ManagedRules.select(new ManagedRules.Overrides(1, Set.of(), Map.of(), Map.of("mp-sqli-001", Set.of("query:q")))));
    assertEquals(WafDecision.Outcome.PASS, excluded.evaluate(search, RateLimiter.NONE).outcome());
    assertEquals("mp-sqli-001", excluded.evaluate(Corpus.get("/search?q=shoes&page=1+union+select+1"), RateLimiter.NONE).ruleId(),
        "the other parameters are still inspected by the rule");
    assertEquals("mp-xss-001", excluded.evaluate(Corpus.get("/search?q=%3Cscript%3Ealert(1)%3C/script%3E"), RateLimiter.NONE).ruleId(),
        "and q still by every other rule");
  }

  @Test
  void anExclusionForEveryRuleAndAHeaderExclusion() {
    WafRequest withCookie = Corpus.get("/", "Cookie", "${jndi:ldap://x/a}");
    WafProgram plain = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.DEFAULT));
    assertEquals("mp-rce-002", plain.evaluate(withCookie, RateLimiter.NONE).ruleId());
    WafProgram excluded = WafCompiler.compile(ManagedRules.select(new ManagedRules.Overrides(1, Set.of(), Map.of(), Map.of("*", Set.of("header:Cookie")))));
    assertEquals(WafDecision.Outcome.PASS, excluded.evaluate(withCookie, RateLimiter.NONE).outcome());
  }

  @Test
  void overridesNamingUnknownRulesAreRefusedByField() {
    Refusal r = assertThrows(Refusal.class, () -> ManagedRules.select(new ManagedRules.Overrides(3, Set.of("mp-nope-001"),
        Map.of("mp-nope-002", new WafRule.Log()), Map.of("mp-sqli-001", Set.of("cookie")))));
    assertEquals(Set.of("paranoia", "disable", "actions.mp-nope-002", "exclusions.mp-sqli-001"),
        new HashSet<>(r.errors().stream().map(Refusal.FieldError::field).toList()));
  }
}
