package io.meshplane.waf;

import io.meshplane.common.Refusal;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A whole traffic-policy document, read and checked (every fault named in one {@link Refusal}):
 *
 * <pre>
 * {"mode": "enforce",                                  // or "shadow": evaluated and reported, never denying
 *  "managed": {"paranoia": 1, "disable": ["mp-scan-001"], "actions": {"mp-xss-001": {"type": "log"}},
 *              "exclusions": {"*": ["query:q"]}},      // absent: the managed set is not applied
 *  "rules": [ ...custom rules ({@link WafPolicy}), evaluated before the managed ones... ],
 *  "routes": {"ir_…": { ...the managed overrides for that ingress route, in place of "managed"... }},
 *  "tests": [{"name": "a search is let through", "expect": "pass",
 *             "request": {"method": "GET", "target": "/search?q=union", "headers": {"user-agent": "curl/8"},
 *                         "client_ip": "203.0.113.7", "body": "", "route": "ir_…"}},
 *            {"name": "admin is internal", "expect": "deny", "rule": "no-admin", "request": {"target": "/admin"}}]}
 * </pre>
 */
final class WafDocument {
  static final int MAX_ROUTES = 32;
  static final int MAX_TESTS = 100;
  static final int MAX_TARGET = 8 * 1024;
  static final int MAX_FIXTURE_HEADERS = 64;
  static final Pattern ROUTE_ID = Pattern.compile("ir_[0-9a-z]{26}");
  static final Pattern TEST_NAME = Pattern.compile("[\\p{L}\\p{N} ._:/()'-]{1,120}");
  private static final Pattern IP = Pattern.compile("[0-9a-fA-F:.]{2,45}");
  private static final Set<String> KEYS = Set.of("mode", "managed", "rules", "routes", "tests");
  private static final Set<String> OVERRIDE_KEYS = Set.of("paranoia", "disable", "actions", "exclusions");
  private static final Set<String> EXPECT = Set.of("deny", "allow", "pass");

  /** One test of the document: a request and the decision it must get ({@code rule}: the rule that decides it, or null). */
  record Fixture(String name, WafRequest request, String route, String expect, String rule) {}

  /**
   * @param managed null: the managed set is not applied (except on routes with their own overrides)
   */
  record Parsed(String mode, ManagedRules.Overrides managed, List<WafRule> rules, Map<String, ManagedRules.Overrides> routes,
      List<Fixture> tests) {}

  private WafDocument() {}

  static Parsed parse(String json) {
    if (json.length() > WafPolicy.MAX_DOCUMENT_CHARS) throw Refusal.invalid("(body)", "a traffic policy is at most " + WafPolicy.MAX_DOCUMENT_CHARS + " characters");
    Object parsed;
    try {
      parsed = BoundedJson.parse(json, 8, 200_000, null);
    } catch (IllegalArgumentException e) {
      throw Refusal.invalid("(body)", e.getMessage());
    }
    if (!(parsed instanceof Map<?, ?> doc)) throw Refusal.invalid("(body)", "a traffic policy is a JSON object");
    // the custom rules, with their own refusals named rules[i]; none when the document has no "rules"
    List<WafRule> rules = doc.containsKey("rules") ? WafPolicy.parse(json) : List.of();
    List<Refusal.FieldError> errors = new ArrayList<>();
    for (Object k : doc.keySet()) {
      if (!KEYS.contains(k)) errors.add(new Refusal.FieldError(String.valueOf(k), "is not a field of a traffic policy (mode, managed, rules, routes, tests)"));
    }
    String mode = "enforce";
    if (doc.containsKey("mode")) {
      if (doc.get("mode") instanceof String m && (m.equals("enforce") || m.equals("shadow"))) mode = m;
      else errors.add(new Refusal.FieldError("mode", "must be enforce or shadow"));
    }
    ManagedRules.Overrides managed = doc.get("managed") == null ? null : overrides("managed", doc.get("managed"), errors);
    Map<String, ManagedRules.Overrides> routes = new LinkedHashMap<>();
    if (doc.get("routes") instanceof Map<?, ?> m) {
      if (m.size() > MAX_ROUTES) errors.add(new Refusal.FieldError("routes", "at most " + MAX_ROUTES + " routes with their own overrides"));
      for (Map.Entry<?, ?> e : m.entrySet()) {
        String id = String.valueOf(e.getKey());
        if (!ROUTE_ID.matcher(id).matches()) {
          errors.add(new Refusal.FieldError("routes." + id, "must be an ingress route id (ir_…)"));
          continue;
        }
        ManagedRules.Overrides o = overrides("routes." + id, e.getValue(), errors);
        if (o != null) routes.put(id, o);
      }
    } else if (doc.containsKey("routes")) {
      errors.add(new Refusal.FieldError("routes", "must be an object of route id → overrides"));
    }
    List<Fixture> tests = new ArrayList<>();
    if (doc.get("tests") instanceof List<?> list) {
      if (list.size() > MAX_TESTS) errors.add(new Refusal.FieldError("tests", "at most " + MAX_TESTS + " tests"));
      Set<String> names = new LinkedHashSet<>();
      for (int i = 0; i < Math.min(list.size(), MAX_TESTS); i++) {
        Fixture f = fixture("tests[" + i + "]", list.get(i), errors);
        if (f != null && !names.add(f.name())) errors.add(new Refusal.FieldError("tests[" + i + "].name", "is the name of an earlier test"));
        if (f != null) tests.add(f);
      }
    } else if (doc.containsKey("tests")) {
      errors.add(new Refusal.FieldError("tests", "must be a list of tests"));
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
    return new Parsed(mode, managed, rules, Map.copyOf(routes), List.copyOf(tests));
  }

  private static ManagedRules.Overrides overrides(String at, Object o, List<Refusal.FieldError> errors) {
    if (!(o instanceof Map<?, ?> m)) {
      errors.add(new Refusal.FieldError(at, "must be an object of paranoia, disable, actions and exclusions"));
      return null;
    }
    int before = errors.size();
    for (Object k : m.keySet()) {
      if (!OVERRIDE_KEYS.contains(k)) errors.add(new Refusal.FieldError(at + "." + k, "is not an override (paranoia, disable, actions, exclusions)"));
    }
    int paranoia = 1;
    if (m.containsKey("paranoia")) {
      if (m.get("paranoia") instanceof Long l && (l == 1 || l == 2)) paranoia = l.intValue();
      else errors.add(new Refusal.FieldError(at + ".paranoia", "must be 1 or 2"));
    }
    Set<String> disabled = new LinkedHashSet<>();
    if (m.get("disable") instanceof List<?> d) {
      for (Object x : d) {
        if (x instanceof String s) disabled.add(s);
        else errors.add(new Refusal.FieldError(at + ".disable", "must list managed rule ids"));
      }
    } else if (m.containsKey("disable")) {
      errors.add(new Refusal.FieldError(at + ".disable", "must be a list of managed rule ids"));
    }
    Map<String, WafRule.Action> actions = new LinkedHashMap<>();
    if (m.get("actions") instanceof Map<?, ?> a) {
      for (Map.Entry<?, ?> e : a.entrySet()) {
        String id = String.valueOf(e.getKey());
        WafRule.Action action = WafPolicy.action(at + ".actions." + id, "rule " + id + ": ", e.getValue(), errors);
        if (action instanceof WafRule.RateLimit) errors.add(new Refusal.FieldError(at + ".actions." + id, "a managed rule's action is deny, log or allow"));
        else if (action != null) actions.put(id, action);
      }
    } else if (m.containsKey("actions")) {
      errors.add(new Refusal.FieldError(at + ".actions", "must be an object of rule id → action"));
    }
    Map<String, Set<String>> exclusions = new LinkedHashMap<>();
    if (m.get("exclusions") instanceof Map<?, ?> x) {
      for (Map.Entry<?, ?> e : x.entrySet()) {
        String id = String.valueOf(e.getKey());
        if (!(e.getValue() instanceof List<?> names)) {
          errors.add(new Refusal.FieldError(at + ".exclusions." + id, "must be a list of query:NAME, form:NAME, json:NAME or header:NAME"));
          continue;
        }
        Set<String> set = new LinkedHashSet<>();
        for (Object n : names) set.add(String.valueOf(n));
        exclusions.put(id, set);
      }
    } else if (m.containsKey("exclusions")) {
      errors.add(new Refusal.FieldError(at + ".exclusions", "must be an object of rule id (or *) → list"));
    }
    if (errors.size() > before) return null;
    ManagedRules.Overrides o2 = new ManagedRules.Overrides(paranoia, Set.copyOf(disabled), Map.copyOf(actions), Map.copyOf(exclusions));
    try {
      ManagedRules.check(o2);
    } catch (Refusal r) {
      for (Refusal.FieldError e : r.errors()) errors.add(new Refusal.FieldError(at + "." + e.field(), e.message()));
      return null;
    }
    return o2;
  }

  private static Fixture fixture(String at, Object o, List<Refusal.FieldError> errors) {
    if (!(o instanceof Map<?, ?> m)) {
      errors.add(new Refusal.FieldError(at, "a test is an object of name, request, expect and rule"));
      return null;
    }
    int before = errors.size();
    String name = m.get("name") instanceof String s ? s : null;
    if (name == null || !TEST_NAME.matcher(name).matches()) errors.add(new Refusal.FieldError(at + ".name", "must be 1 to 120 letters, digits, spaces or ._:/()'-"));
    String expect = m.get("expect") instanceof String s ? s : null;
    if (expect == null || !EXPECT.contains(expect)) errors.add(new Refusal.FieldError(at + ".expect", "must be deny, allow or pass"));
    String rule = null;
    if (m.get("rule") != null) {
      if (m.get("rule") instanceof String s && WafPolicy.ID.matcher(s).matches()) rule = s;
      else errors.add(new Refusal.FieldError(at + ".rule", "must be a rule id"));
    }
    Object[] parsed = request(at + ".request", m.get("request"), errors);
    if (errors.size() > before) return null;
    return new Fixture(name, (WafRequest) parsed[0], (String) parsed[1], expect, rule);
  }

  /**
   * A request as a test or a preview sample gives it: {@code {method, target, headers, client_ip, body,
   * route, mesh_identity}}, all optional but {@code target}. Returns {request, route id or null}, or
   * nulls with the faults added.
   */
  static Object[] request(String at, Object o, List<Refusal.FieldError> errors) {
    if (!(o instanceof Map<?, ?> m)) {
      errors.add(new Refusal.FieldError(at, "a request is an object with at least a target (/path?query)"));
      return new Object[2];
    }
    int before = errors.size();
    for (Object k : m.keySet()) {
      if (!Set.of("method", "target", "headers", "client_ip", "body", "route", "mesh_identity").contains(k)) {
        errors.add(new Refusal.FieldError(at + "." + k, "is not a field of a request (method, target, headers, client_ip, body, route, mesh_identity)"));
      }
    }
    String method = m.get("method") == null ? "GET" : m.get("method") instanceof String s && s.matches("[A-Z]{1,16}") ? s : null;
    if (method == null) errors.add(new Refusal.FieldError(at + ".method", "must be an HTTP method in capitals (GET)"));
    String target = m.get("target") instanceof String s ? s : null;
    if (target == null || !target.startsWith("/") || target.length() > MAX_TARGET || target.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
      errors.add(new Refusal.FieldError(at + ".target", "must be a request target: /path?query, printable ASCII, at most " + MAX_TARGET + " characters"));
    }
    List<Map.Entry<String, String>> headers = new ArrayList<>();
    if (m.get("headers") instanceof Map<?, ?> h) {
      if (h.size() > MAX_FIXTURE_HEADERS) errors.add(new Refusal.FieldError(at + ".headers", "at most " + MAX_FIXTURE_HEADERS + " headers"));
      for (Map.Entry<?, ?> e : h.entrySet()) {
        String n = String.valueOf(e.getKey());
        if (!n.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}")) errors.add(new Refusal.FieldError(at + ".headers." + n, "is not a header name"));
        List<?> values = e.getValue() instanceof List<?> l ? l : List.of(e.getValue());
        for (Object v : values) {
          if (v instanceof String s && s.length() <= 8192 && s.chars().noneMatch(c -> c < 0x20 && c != '\t')) headers.add(new AbstractMap.SimpleImmutableEntry<>(n, s));
          else errors.add(new Refusal.FieldError(at + ".headers." + n, "must be a string (or a list of strings) of at most 8192 characters without control characters"));
        }
      }
    } else if (m.containsKey("headers")) {
      errors.add(new Refusal.FieldError(at + ".headers", "must be an object of name → value"));
    }
    String ip = "";
    if (m.get("client_ip") != null) {
      if (m.get("client_ip") instanceof String s && IP.matcher(s).matches() && UrlText.ipBytes(s) != null) ip = s;
      else errors.add(new Refusal.FieldError(at + ".client_ip", "must be an IP address"));
    }
    byte[] body = new byte[0];
    if (m.get("body") != null) {
      if (m.get("body") instanceof String s && s.length() <= RequestModel.BODY_PREFIX) body = s.getBytes(StandardCharsets.UTF_8);
      else errors.add(new Refusal.FieldError(at + ".body", "must be a string of at most " + RequestModel.BODY_PREFIX + " characters"));
    }
    String route = null;
    if (m.get("route") != null) {
      if (m.get("route") instanceof String s && ROUTE_ID.matcher(s).matches()) route = s;
      else errors.add(new Refusal.FieldError(at + ".route", "must be an ingress route id (ir_…)"));
    }
    String mesh = m.get("mesh_identity") instanceof String s && s.length() <= 256 ? s : "";
    if (errors.size() > before) return new Object[2];
    return new Object[] {new WafRequest(method, target, headers, ip, body, body.length, mesh), route};
  }
}
