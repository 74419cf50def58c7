package io.meshplane.waf;

import java.time.Duration;
import java.util.Set;

/**
 * One rule of a WAF policy: when {@code expression} (CEL, over {@code request.*}) is true, {@code action}
 * applies. {@code exclusions} name what the rule does not see ({@code query:NAME}, {@code form:NAME},
 * {@code json:NAME}, {@code header:NAME}): a per-route override of a managed rule sets them.
 */
record WafRule(String id, String expression, Action action, Set<String> exclusions) {
  WafRule {
    exclusions = Set.copyOf(exclusions);
  }

  WafRule(String id, String expression, Action action) {
    this(id, expression, action, Set.of());
  }

  /** What a matching rule does. */
  sealed interface Action permits Deny, Log, Allow, RateLimit {
    String type();
  }

  /** Stop: refuse the request with {@code status} and a problem titled {@code title}. */
  record Deny(int status, String title) implements Action {
    public String type() {
      return "deny";
    }
  }

  /** Record the match and go on. */
  record Log() implements Action {
    public String type() {
      return "log";
    }
  }

  /** Stop: let the request through, no later rule evaluated. */
  record Allow() implements Action {
    public String type() {
      return "allow";
    }
  }

  /**
   * Count the request against the bucket named by {@code key} (a CEL expression giving a string,
   * usually {@code request.client_ip}): over {@code limit} per {@code window}, refuse with 429; under,
   * go on.
   */
  record RateLimit(String key, Duration window, int limit) implements Action {
    public String type() {
      return "rate_limit";
    }
  }
}
