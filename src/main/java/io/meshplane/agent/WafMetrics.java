package io.meshplane.agent;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The edge's WAF families of the agent's /metrics ({@code mesh_waf_*}, docs/OPERATIONS.md "Metrics"),
 * in the rules of {@link AgentMetrics}. Bounded: the first {@value IngressMetrics#ROUTES} routes, and
 * per route at most {@value IngressCounters.Waf#MAX_RULES} rules. Absent before a traffic policy is held.
 */
final class WafMetrics {
  private WafMetrics() {}

  static void write(StringBuilder sb, IngressRoutes table, IngressCounters counters, EdgeWaf waf) {
    EdgeWaf.Held held = waf.held();
    if (held.version() == null) return;
    List<IngressRoutes.Route> routes = table.routes().size() <= IngressMetrics.ROUTES ? table.routes() : table.routes().subList(0, IngressMetrics.ROUTES);
    IngressMetrics.family(sb, "mesh_waf_policy_version", "gauge", "The traffic policy version the edge enforces, and the one it evaluates in shadow, by mode.");
    if (held.enforce() != null) sb.append("mesh_waf_policy_version{mode=\"enforce\"} ").append(held.enforce().version()).append('\n');
    if (held.shadow() != null) sb.append("mesh_waf_policy_version{mode=\"shadow\"} ").append(held.shadow().version()).append('\n');
    IngressMetrics.family(sb, "mesh_waf_decisions_total", "counter",
        "WAF decisions by route and outcome: evaluated, denied, rate_limited, logged, would_deny (shadow), errors (a rule failed), busy (refused 503).");
    for (IngressRoutes.Route r : routes) {
      IngressCounters.Waf w = counters.of(r.id()).waf;
      if (w == null) continue;
      long[] values = {w.evaluated, w.denied, w.rateLimited, w.logged, w.wouldDeny, w.errors, w.busy};
      String[] names = {"evaluated", "denied", "rate_limited", "logged", "would_deny", "errors", "busy"};
      for (int i = 0; i < names.length; i++) {
        sb.append("mesh_waf_decisions_total{route=\"").append(r.id()).append("\",outcome=\"").append(names[i]).append("\"} ").append(values[i]).append('\n');
      }
    }
    IngressMetrics.family(sb, "mesh_waf_rule_hits_total", "counter", "Requests a WAF rule denied, rate-limited or logged, by route and rule.");
    for (IngressRoutes.Route r : routes) {
      IngressCounters.Waf w = counters.of(r.id()).waf;
      if (w == null) continue;
      for (Map.Entry<String, Long> e : w.rules.entrySet()) {
        sb.append("mesh_waf_rule_hits_total{route=\"").append(r.id()).append("\",rule=\"").append(e.getKey()).append("\"} ").append(e.getValue()).append('\n');
      }
    }
    WafTimes t = waf.times;
    IngressMetrics.family(sb, "mesh_waf_eval_seconds", "histogram", "Time to evaluate a request against the traffic policy (enforced and shadow together), on the WAF's workers.");
    for (int i = 0; i < WafTimes.BUCKETS.length; i++) {
      sb.append("mesh_waf_eval_seconds_bucket{le=\"").append(String.format(Locale.ROOT, "%s", WafTimes.BUCKETS[i])).append("\"} ").append(t.atMost(i)).append('\n');
    }
    sb.append("mesh_waf_eval_seconds_bucket{le=\"+Inf\"} ").append(t.count()).append('\n');
    sb.append("mesh_waf_eval_seconds_sum ").append(String.format(Locale.ROOT, "%.6f", t.sumSeconds())).append('\n');
    sb.append("mesh_waf_eval_seconds_count ").append(t.count()).append('\n');
    IngressMetrics.family(sb, "mesh_waf_eval_cpu_seconds_total", "counter", "CPU time of the WAF's worker threads spent evaluating requests.");
    sb.append("mesh_waf_eval_cpu_seconds_total ").append(String.format(Locale.ROOT, "%.6f", t.cpuSeconds())).append('\n');
  }
}
