package io.meshplane.waf;

import java.util.List;

/**
 * What a policy decided about one request.
 *
 * @param outcome {@code ALLOW} (an allow rule matched), {@code DENY} (a deny rule matched, or a rate
 *     limit was exceeded), {@code PASS} (no rule stopped the evaluation: the request goes on)
 * @param status the status to answer with when denied (403, 429, ...), else 0
 * @param title the problem's title when denied, else empty
 * @param ruleId the rule that stopped the evaluation, else empty
 * @param hits every rule that matched, in order, with what it did
 * @param errors rules whose evaluation failed (they count as not matched), {@code id: reason}
 */
record WafDecision(Outcome outcome, int status, String title, String ruleId, List<Hit> hits, List<String> errors) {
  enum Outcome { ALLOW, DENY, PASS }

  /**
   * One matching rule: its id and its action's type ({@code deny}, {@code log}, {@code allow},
   * {@code rate_limit}); for a rate limit, {@code limited} says whether it refused the request.
   */
  record Hit(String ruleId, String action, boolean limited) {}

  List<String> matchedIds() {
    return hits.stream().map(Hit::ruleId).toList();
  }
}
