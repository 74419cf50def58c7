package io.meshplane.waf;

import io.meshplane.common.Refusal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A WAF policy document (JSON), read into ordered {@link WafRule}s; every field at fault is named in
 * one {@link Refusal} ({@code rules[2].action.status}, with the rule's id in the message):
 *
 * <pre>
 * {"rules": [
 *   {"id": "no-admin", "expression": "request.path_normalized.startsWith('/admin')",
 *    "action": {"type": "deny", "status": 403, "title": "Administration is internal"}},
 *   {"id": "per-ip", "expression": "true",
 *    "action": {"type": "rate_limit", "key": "request.client_ip", "window_seconds": 60, "limit": 600}},
 *   {"id": "watch-search", "expression": "'q' in request.query", "action": {"type": "log"}},
 *   {"id": "trusted", "expression": "ip_in(request.client_ip, '10.0.0.0/8')", "action": {"type": "allow"}}
 * ]}
 * </pre>
 */
final class WafPolicy {
  private WafPolicy() {}

  static final int MAX_DOCUMENT_CHARS = 1024 * 1024;
  static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
  static final Pattern EXCLUSION = Pattern.compile("(query|form|json|header):[^\\s]{1,128}");

  static List<WafRule> parse(String json) {
    if (json.length() > MAX_DOCUMENT_CHARS) throw Refusal.invalid("(body)", "a WAF policy is at most " + MAX_DOCUMENT_CHARS + " characters");
    Object doc;
    try {
      doc = BoundedJson.parse(json, 8, 200_000, null);
    } catch (IllegalArgumentException e) {
      throw Refusal.invalid("(body)", e.getMessage());
    }
    if (!(doc instanceof Map<?, ?> m) || !(m.get("rules") instanceof List<?> list)) {
      throw Refusal.invalid("rules", "a WAF policy is an object with a list of rules");
    }
    if (list.size() > WafCompiler.MAX_RULES) throw Refusal.invalid("rules", "at most " + WafCompiler.MAX_RULES + " rules");
    List<Refusal.FieldError> errors = new ArrayList<>();
    List<WafRule> rules = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      WafRule r = rule("rules[" + i + "]", list.get(i), errors);
      if (r != null) rules.add(r);
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
    return rules;
  }

  private static WafRule rule(String at, Object o, List<Refusal.FieldError> errors) {
    if (!(o instanceof Map<?, ?> m)) {
      errors.add(new Refusal.FieldError(at, "a rule is an object"));
      return null;
    }
    int before = errors.size();
    String id = m.get("id") instanceof String s ? s : "";
    if (!ID.matcher(id).matches()) errors.add(new Refusal.FieldError(at + ".id", "an id is 1 to 64 of a-z, 0-9, '.', '_', '-'"));
    String name = "rule " + (id.isEmpty() ? at : id) + ": ";
    String expression = m.get("expression") instanceof String s ? s : null;
    if (expression == null) errors.add(new Refusal.FieldError(at + ".expression", name + "the expression is a string"));
    WafRule.Action action = action(at + ".action", name, m.get("action"), errors);
    Set<String> exclusions = new LinkedHashSet<>();
    if (m.get("exclusions") instanceof List<?> ex) {
      for (Object x : ex) {
        if (x instanceof String s && EXCLUSION.matcher(s).matches()) {
          exclusions.add(s.startsWith("header:") ? s.toLowerCase(java.util.Locale.ROOT) : s);
        } else {
          errors.add(new Refusal.FieldError(at + ".exclusions", name + "an exclusion is query:NAME, form:NAME, json:NAME or header:NAME"));
        }
      }
    } else if (m.containsKey("exclusions")) {
      errors.add(new Refusal.FieldError(at + ".exclusions", name + "exclusions are a list"));
    }
    return errors.size() == before ? new WafRule(id, expression, action, exclusions) : null;
  }

  static WafRule.Action action(String at, String name, Object o, List<Refusal.FieldError> errors) {
    if (!(o instanceof Map<?, ?> m) || !(m.get("type") instanceof String type)) {
      errors.add(new Refusal.FieldError(at, name + "an action is an object with a type: deny, log, allow or rate_limit"));
      return null;
    }
    switch (type) {
      case "log":
        return new WafRule.Log();
      case "allow":
        return new WafRule.Allow();
      case "deny": {
        long status = m.get("status") instanceof Long l ? l : -1;
        if (status < 400 || status > 599) errors.add(new Refusal.FieldError(at + ".status", name + "a deny status is 400 to 599"));
        String title = m.get("title") instanceof String s ? s : "Request refused by the web application firewall";
        if (title.isBlank() || title.length() > 200) errors.add(new Refusal.FieldError(at + ".title", name + "a title is 1 to 200 characters"));
        return new WafRule.Deny((int) status, title);
      }
      case "rate_limit": {
        String key = m.get("key") instanceof String s ? s : null;
        if (key == null) errors.add(new Refusal.FieldError(at + ".key", name + "the key is a CEL expression giving a string"));
        long window = m.get("window_seconds") instanceof Long l ? l : -1;
        if (window < 1 || window > 86_400) errors.add(new Refusal.FieldError(at + ".window_seconds", name + "a window is 1 to 86400 seconds"));
        long limit = m.get("limit") instanceof Long l ? l : -1;
        if (limit < 1 || limit > 1_000_000) errors.add(new Refusal.FieldError(at + ".limit", name + "a limit is 1 to 1000000 requests"));
        return new WafRule.RateLimit(key, Duration.ofSeconds(Math.max(window, 1)), (int) Math.max(limit, 1));
      }
      default:
        errors.add(new Refusal.FieldError(at + ".type", name + "the type is deny, log, allow or rate_limit"));
        return null;
    }
  }
}
