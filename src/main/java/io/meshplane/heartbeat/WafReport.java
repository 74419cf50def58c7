package io.meshplane.heartbeat;

import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The traffic-policy parts of a heartbeat's {@code ingress_routes} block (API.md §11, §20): what the
 * ingress node enforces ({@code ingress_routes.waf}: the policy version, the enforced and shadow
 * versions, a compile error, the probe's result, samples of denied requests) and, per route, the WAF's
 * counters ({@code ingress_routes.routes.<id>.waf}). Everything is bounded (the constants below) and
 * re-encoded from the checked values only; unknown keys are ignored, as elsewhere in the heartbeat.
 * The agent redacts the samples (no cookies, no credentials, the body cut); this side bounds them again.
 */
final class WafReport {
  static final int MAX_SAMPLES = 5;
  static final int MAX_RULES = 16;
  static final int MAX_HEADERS = 12;
  static final int MAX_TARGET = 512;
  static final int MAX_VALUE = 200;
  static final int MAX_BODY = 256;
  static final int MAX_ERROR = 200;
  private static final List<String> COUNTERS = List.of("evaluated", "denied", "logged", "rate_limited", "would_deny", "errors", "busy");
  private static final List<String> OUTCOMES = List.of("deny", "would_deny");
  private static final Pattern RULE = Pattern.compile("[a-z0-9][a-z0-9._-]{0,63}");
  private static final Pattern VERSION = Pattern.compile("[0-9]{1,18}");
  private static final Pattern METHOD = Pattern.compile("[A-Za-z]{1,16}");
  private static final Pattern HEADER = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}");
  /** Seconds since the epoch up to 9999-12-31. */
  private static final long MAX_AT = 253_402_300_799L;

  private WafReport() {}

  /** {@code ingress_routes.waf}, or null when absent. */
  static JsonObject parse(Fields f, Object block) {
    if (block == null) return null;
    String at = "ingress_routes.waf";
    if (!(block instanceof JsonObject b)) {
      f.error(at, "must be an object");
      return null;
    }
    JsonObject out = new JsonObject();
    Object v = b.getValue("version");
    if (v == null) out.putNull("version");
    else if (v instanceof String s && VERSION.matcher(s).matches()) out.put("version", s);
    else f.error(at + ".version", "must be null or the traffic policy version an answer gave, as a string (e.g. \"7\")");
    for (String k : List.of("enforce", "shadow")) {
      Object n = b.getValue(k);
      if (n == null) out.putNull(k);
      else if ((n instanceof Integer || n instanceof Long) && ((Number) n).longValue() > 0) out.put(k, ((Number) n).longValue());
      else f.error(at + "." + k, "must be null or a policy version (a whole number > 0)");
    }
    out.put("error", text(f, at + ".error", b.getValue("error"), MAX_ERROR));
    Object p = b.getValue("probe");
    if (p == null) {
      out.putNull("probe");
    } else if (p instanceof JsonObject probe) {
      JsonObject po = new JsonObject();
      Object pv = probe.getValue("version");
      if (pv instanceof String s && VERSION.matcher(s).matches()) po.put("version", s);
      else f.error(at + ".probe.version", "must be the policy version probed, as a string");
      if (probe.getValue("passed") instanceof Boolean ok) po.put("passed", ok);
      else f.error(at + ".probe.passed", "must be true or false");
      po.put("status", bounded(f, at + ".probe.status", probe.getValue("status"), 599));
      po.put("at", bounded(f, at + ".probe.at", probe.getValue("at"), MAX_AT));
      po.put("detail", text(f, at + ".probe.detail", probe.getValue("detail"), MAX_ERROR));
      out.put("probe", po);
    } else {
      f.error(at + ".probe", "must be null or an object");
    }
    Object sm = b.getValue("samples");
    JsonArray samples = new JsonArray();
    if (sm != null && !(sm instanceof JsonArray)) {
      f.error(at + ".samples", "must be a list");
    } else if (sm instanceof JsonArray list) {
      if (list.size() > MAX_SAMPLES) {
        f.error(at + ".samples", "must have at most " + MAX_SAMPLES + " samples");
      } else {
        for (int i = 0; i < list.size(); i++) {
          JsonObject one = sample(f, at + ".samples[" + i + "]", list.getValue(i));
          if (one != null) samples.add(one);
        }
      }
    }
    return out.put("samples", samples);
  }

  /** One route's WAF counters. */
  static JsonObject counters(Fields f, String at, Object o) {
    JsonObject out = new JsonObject();
    if (!(o instanceof JsonObject in)) {
      f.error(at, "must be an object of counters");
      return out;
    }
    for (String k : COUNTERS) out.put(k, IngressReport.count(f, at + "." + k, in.getValue(k)));
    JsonObject rules = new JsonObject();
    Object r = in.getValue("rules");
    if (r != null && !(r instanceof JsonObject)) {
      f.error(at + ".rules", "must be an object of counts keyed by rule id");
    } else if (r instanceof JsonObject byRule) {
      if (byRule.size() > MAX_RULES) f.error(at + ".rules", "must have at most " + MAX_RULES + " rules");
      else for (Map.Entry<String, Object> e : byRule) {
        if (!RULE.matcher(e.getKey()).matches()) {
          f.error(at + ".rules", "must be keyed by rule ids");
          break;
        }
        rules.put(e.getKey(), IngressReport.count(f, at + ".rules." + e.getKey(), e.getValue()));
      }
    }
    return out.put("rules", rules);
  }

  private static JsonObject sample(Fields f, String at, Object o) {
    if (!(o instanceof JsonObject in)) {
      f.error(at, "must be an object");
      return null;
    }
    JsonObject out = new JsonObject().put("at", bounded(f, at + ".at", in.getValue("at"), MAX_AT));
    if (in.getValue("route") instanceof String route && Ids.looksLike("ir", route)) out.put("route", route);
    else f.error(at + ".route", "must be a route id (ir_…)");
    if (in.getValue("rule") instanceof String rule && RULE.matcher(rule).matches()) out.put("rule", rule);
    else f.error(at + ".rule", "must be a rule id");
    if (in.getValue("outcome") instanceof String oc && OUTCOMES.contains(oc)) out.put("outcome", oc);
    else f.error(at + ".outcome", "must be deny or would_deny");
    out.put("status", bounded(f, at + ".status", in.getValue("status"), 599));
    if (!(in.getValue("request") instanceof JsonObject req)) {
      f.error(at + ".request", "must be an object");
      return out;
    }
    JsonObject r = new JsonObject();
    if (req.getValue("method") instanceof String m && METHOD.matcher(m).matches()) r.put("method", m);
    else f.error(at + ".request.method", "must be a method");
    r.put("target", text(f, at + ".request.target", req.getValue("target"), MAX_TARGET));
    r.put("client_ip", text(f, at + ".request.client_ip", req.getValue("client_ip"), 45));
    r.put("body", text(f, at + ".request.body", req.getValue("body"), MAX_BODY));
    JsonArray headers = new JsonArray();
    Object h = req.getValue("headers");
    if (h != null && (!(h instanceof JsonArray list) || list.size() > MAX_HEADERS)) {
      f.error(at + ".request.headers", "must be a list of at most " + MAX_HEADERS + " [name, value] pairs");
    } else if (h instanceof JsonArray list) {
      for (int i = 0; i < list.size(); i++) {
        if (list.getValue(i) instanceof JsonArray pair && pair.size() == 2 && pair.getValue(0) instanceof String n && HEADER.matcher(n).matches()
            && pair.getValue(1) instanceof String val && val.length() <= MAX_VALUE && val.chars().noneMatch(Character::isISOControl)) {
          headers.add(new JsonArray().add(n).add(val));
        } else {
          f.error(at + ".request.headers[" + i + "]", "must be [name, value] with a value of at most " + MAX_VALUE + " characters");
        }
      }
    }
    return out.put("request", r.put("headers", headers));
  }

  private static String text(Fields f, String at, Object v, int max) {
    if (v == null) return null;
    if (v instanceof String s && s.length() <= max && s.chars().noneMatch(c -> Character.isISOControl(c) && c != '\t')) return s;
    f.error(at, "must be null or at most " + max + " characters without control characters");
    return null;
  }

  private static long bounded(Fields f, String at, Object v, long max) {
    if (v == null) return 0;
    if ((v instanceof Integer || v instanceof Long) && ((Number) v).longValue() >= 0 && ((Number) v).longValue() <= max) return ((Number) v).longValue();
    f.error(at, "must be a whole number from 0 to " + max);
    return 0;
  }
}
