package io.meshplane.waf;

import io.meshplane.common.Refusal;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The managed rule set shipped in the jar ({@code waf/managed-rules.json}): rules with an id
 * ({@code mp-sqli-001}), a class, a paranoia level (1: few false positives; 2: broader, for routes that
 * take no free text) and a default action; and the per-route {@link Overrides} that tune it.
 *
 * <p>An exclusion removes a named parameter or header from what one rule (or every rule, {@code *})
 * sees: {@code query:q} takes {@code q} out of {@code request.query}, {@code request.args} and
 * {@code request.args_text} for that rule only; {@code header:cookie} out of {@code request.headers}.
 * So a search box whose queries look like SQL keeps every other rule on every other parameter.
 */
final class ManagedRules {
  static final String RESOURCE = "/waf/managed-rules.json";

  /** One managed rule as shipped. */
  record Managed(WafRule rule, String ruleClass, int paranoia, String description) {}

  /**
   * A route's tuning of the managed set.
   *
   * @param paranoia the highest level applied (1 or 2)
   * @param disabled rule ids not applied
   * @param actions rule ids whose action is replaced ({@code log} to watch before denying)
   * @param exclusions rule id (or {@code *}) → {@code query:NAME}, {@code form:NAME}, {@code json:NAME}, {@code header:NAME}
   */
  record Overrides(int paranoia, Set<String> disabled, Map<String, WafRule.Action> actions, Map<String, Set<String>> exclusions) {
    static final Overrides DEFAULT = new Overrides(1, Set.of(), Map.of(), Map.of());

    static Overrides paranoia(int level) {
      return new Overrides(level, Set.of(), Map.of(), Map.of());
    }
  }

  private static volatile List<Managed> shipped;

  private ManagedRules() {}

  /** The shipped rules, read once. */
  static List<Managed> shipped() {
    List<Managed> s = shipped;
    if (s == null) {
      try (InputStream in = ManagedRules.class.getResourceAsStream(RESOURCE)) {
        if (in == null) throw new IllegalStateException(RESOURCE + " is missing from the jar");
        s = read(new String(in.readAllBytes(), StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      shipped = s;
    }
    return s;
  }

  static List<Managed> read(String json) {
    List<WafRule> rules = WafPolicy.parse(json);
    Map<?, ?> doc = (Map<?, ?>) BoundedJson.parse(json, 8, 200_000, null);
    List<?> raw = (List<?>) doc.get("rules");
    List<Managed> out = new ArrayList<>();
    for (int i = 0; i < rules.size(); i++) {
      Map<?, ?> r = (Map<?, ?>) raw.get(i);
      long paranoia = r.get("paranoia") instanceof Long l ? l : 1;
      out.add(new Managed(rules.get(i), String.valueOf(r.get("class")), (int) paranoia, String.valueOf(r.get("description"))));
    }
    return List.copyOf(out);
  }

  /** The rules a route applies: its level and below, less the disabled ones, actions and exclusions as overridden. */
  static List<WafRule> select(Overrides o) {
    check(o);
    List<WafRule> out = new ArrayList<>();
    Set<String> everywhere = o.exclusions().getOrDefault("*", Set.of());
    for (Managed m : shipped()) {
      WafRule r = m.rule();
      if (m.paranoia() > o.paranoia() || o.disabled().contains(r.id())) continue;
      Set<String> ex = new LinkedHashSet<>();
      for (String x : everywhere) ex.add(canonical(x));
      for (String x : o.exclusions().getOrDefault(r.id(), Set.of())) ex.add(canonical(x));
      out.add(new WafRule(r.id(), r.expression(), o.actions().getOrDefault(r.id(), r.action()), ex));
    }
    return out;
  }

  /** Header names are matched lower-cased, as the model holds them. */
  private static String canonical(String exclusion) {
    return exclusion.startsWith("header:") ? exclusion.toLowerCase(java.util.Locale.ROOT) : exclusion;
  }

  /** Overrides naming a rule the set does not have, or a level it does not know, are refused by field. */
  static void check(Overrides o) {
    Map<String, Managed> byId = new HashMap<>();
    for (Managed m : shipped()) byId.put(m.rule().id(), m);
    List<Refusal.FieldError> errors = new ArrayList<>();
    if (o.paranoia() < 1 || o.paranoia() > 2) errors.add(new Refusal.FieldError("paranoia", "the paranoia level is 1 or 2"));
    for (String id : o.disabled()) {
      if (!byId.containsKey(id)) errors.add(new Refusal.FieldError("disable", "no managed rule " + id));
    }
    for (String id : o.actions().keySet()) {
      if (!byId.containsKey(id)) errors.add(new Refusal.FieldError("actions." + id, "no managed rule " + id));
    }
    for (Map.Entry<String, Set<String>> e : o.exclusions().entrySet()) {
      if (!e.getKey().equals("*") && !byId.containsKey(e.getKey())) {
        errors.add(new Refusal.FieldError("exclusions." + e.getKey(), "no managed rule " + e.getKey()));
      }
      for (String x : e.getValue()) {
        if (!WafPolicy.EXCLUSION.matcher(x).matches()) {
          errors.add(new Refusal.FieldError("exclusions." + e.getKey(), "an exclusion is query:NAME, form:NAME, json:NAME or header:NAME, not " + x));
        }
      }
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
  }
}
