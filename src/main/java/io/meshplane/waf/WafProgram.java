package io.meshplane.waf;

import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelVariableResolver;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * A compiled WAF policy: immutable, thread-safe, evaluated by any number of threads at once. Rules run
 * in order; the first {@code allow} or {@code deny} that matches stops; a {@code log} is recorded and
 * the next rule runs; a {@code rate_limit} that matches takes a token from its key's bucket and either
 * stops with 429 (empty) or goes on. A rule whose evaluation fails (a missing map key, the iteration
 * guard) counts as not matched and is reported in {@link WafDecision#errors()}: a failing rule never
 * denies by accident, and the errors are there for metrics and the preview.
 *
 * <p>Per request: one {@link RequestModel} (and one narrowed copy per distinct exclusion set that a rule
 * using it reaches), one resolver; the CEL programs and compiled patterns are shared.
 */
final class WafProgram {
  record Compiled(WafRule rule, CelRuntime.Program program, CelRuntime.Program key, int exclusionSet) {}

  private final List<Compiled> rules;
  private final List<Set<String>> exclusionSets;
  private final long worstCaseCost;

  WafProgram(List<Compiled> rules, List<Set<String>> exclusionSets, long worstCaseCost) {
    this.rules = List.copyOf(rules);
    this.exclusionSets = List.copyOf(exclusionSets);
    this.worstCaseCost = worstCaseCost;
  }

  /** The policy's worst-case cost in steps ({@link CostBound}), for the preview and the metrics. */
  long worstCaseCost() {
    return worstCaseCost;
  }

  int size() {
    return rules.size();
  }

  WafDecision evaluate(WafRequest request, RateLimiter limiter) {
    return evaluate(new RequestModel(request), limiter);
  }

  WafDecision evaluate(RequestModel model, RateLimiter limiter) {
    CelVariableResolver base = model::find;
    CelVariableResolver[] narrowed = exclusionSets.isEmpty() ? null : new CelVariableResolver[exclusionSets.size()];
    List<WafDecision.Hit> hits = null;
    List<String> errors = null;
    for (Compiled c : rules) {
      CelVariableResolver vars = base;
      if (c.exclusionSet >= 0) {
        if (narrowed[c.exclusionSet] == null) narrowed[c.exclusionSet] = model.without(exclusionSets.get(c.exclusionSet))::find;
        vars = narrowed[c.exclusionSet];
      }
      boolean matched;
      String key = null;
      try {
        matched = Boolean.TRUE.equals(c.program.eval(vars));
        if (matched && c.key != null) key = (String) c.key.eval(vars);
      } catch (CelEvaluationException | RuntimeException e) {
        if (errors == null) errors = new ArrayList<>(2);
        errors.add(c.rule.id() + ": " + oneLine(e.getMessage()));
        continue;
      }
      if (!matched) continue;
      if (hits == null) hits = new ArrayList<>(4);
      WafRule.Action a = c.rule.action();
      if (a instanceof WafRule.Deny d) {
        hits.add(new WafDecision.Hit(c.rule.id(), a.type(), false));
        return new WafDecision(WafDecision.Outcome.DENY, d.status(), d.title(), c.rule.id(), hits, errors(errors));
      } else if (a instanceof WafRule.Allow) {
        hits.add(new WafDecision.Hit(c.rule.id(), a.type(), false));
        return new WafDecision(WafDecision.Outcome.ALLOW, 0, "", c.rule.id(), hits, errors(errors));
      } else if (a instanceof WafRule.RateLimit rl) {
        boolean ok = limiter.tryAcquire(c.rule.id(), key, rl.limit(), rl.window());
        hits.add(new WafDecision.Hit(c.rule.id(), a.type(), !ok));
        if (!ok) {
          return new WafDecision(WafDecision.Outcome.DENY, 429, "Too many requests", c.rule.id(), hits, errors(errors));
        }
      } else {
        hits.add(new WafDecision.Hit(c.rule.id(), a.type(), false));
      }
    }
    return new WafDecision(WafDecision.Outcome.PASS, 0, "", "", hits == null ? List.of() : hits, errors(errors));
  }

  private static List<String> errors(List<String> errors) {
    return errors == null ? List.of() : errors;
  }

  private static String oneLine(String s) {
    if (s == null) return "evaluation failed";
    String t = s.replace('\n', ' ');
    return t.length() > 200 ? t.substring(0, 200) : t;
  }
}
