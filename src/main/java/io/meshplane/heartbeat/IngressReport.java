package io.meshplane.heartbeat;

import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;

/**
 * The {@code ingress_routes} block of a heartbeat (API.md §11, §19): the ingress routes version the
 * agent applied and its counters per route. Bounded: at most {@value #MAX_ROUTES} routes, ids of the
 * {@code ir_} shape, counters whole numbers &ge; 0, a version of at most 40 characters of digits and
 * '.', a certificate's {@code not_after} epoch seconds, an {@code acme_error} (ACME) or
 * {@code meshca_error} (MeshCA) of at most {@value #MAX_ACME_ERROR} characters without control characters. Keys this build does not know are ignored (a newer agent's counters), as elsewhere in the
 * heartbeat; what is kept is re-encoded from the checked values only, so the live entry never holds
 * more than the known fields of 64 routes.
 */
final class IngressReport {
  static final int MAX_ROUTES = 64;
  static final int MAX_ACME_ERROR = 200;
  /** 9999-12-31T23:59:59Z: a later {@code not_after} is no certificate's. */
  static final long MAX_NOT_AFTER = 253_402_300_799L;
  private static final List<String> COUNTERS = List.of("requests", "errors", "active", "bytes_in", "bytes_out");
  private static final List<String> CLASSES = List.of("2xx", "3xx", "4xx", "5xx");

  private IngressReport() {}

  /**
   * {version, stats as compact JSON, the traffic-policy report without its samples as compact JSON
   * ({@link WafReport}), its samples as a compact JSON list}; each "" when absent. Errors go to {@code f}
   * under {@code ingress_routes…}. The samples are kept apart: a node record reads the small report, only
   * {@code GET /v1/waf/samples} reads the samples.
   */
  static String[] parse(Fields f, Object block) {
    if (block == null) return new String[] {"", "", "", ""};
    if (!(block instanceof JsonObject b)) {
      f.error("ingress_routes", "must be an object");
      return new String[] {"", "", "", ""};
    }
    String version = "";
    Object v = b.getValue("version");
    if (v instanceof String s && !s.isEmpty() && s.length() <= 40 && s.chars().allMatch(c -> c >= '0' && c <= '9' || c == '.')) {
      version = s;
    } else {
      f.error("ingress_routes.version", "must be the version an answer gave, as a string (e.g. \"7\")");
    }
    JsonObject stats = new JsonObject();
    Object r = b.getValue("routes");
    if (r != null) {
      if (!(r instanceof JsonObject routes)) {
        f.error("ingress_routes.routes", "must be an object keyed by route id");
      } else if (routes.size() > MAX_ROUTES) {
        f.error("ingress_routes.routes", "must have at most " + MAX_ROUTES + " routes");
      } else {
        for (Map.Entry<String, Object> e : routes) {
          String at = "ingress_routes.routes." + (Ids.looksLike("ir", e.getKey()) ? e.getKey() : "?");
          if (!Ids.looksLike("ir", e.getKey())) {
            f.error("ingress_routes.routes", "must be keyed by route ids (ir_…)");
            break;
          }
          if (!(e.getValue() instanceof JsonObject in)) {
            f.error(at, "must be an object");
            continue;
          }
          stats.put(e.getKey(), route(f, at, in));
        }
      }
    }
    JsonObject waf = WafReport.parse(f, b.getValue("waf"));
    Object samples = waf == null ? null : waf.remove("samples");
    String encodedSamples = samples instanceof io.vertx.core.json.JsonArray a && !a.isEmpty() ? a.encode() : "";
    return new String[] {version, stats.isEmpty() ? "" : stats.encode(), waf == null ? "" : waf.encode(), encodedSamples};
  }

  private static JsonObject route(Fields f, String at, JsonObject in) {
    JsonObject out = new JsonObject();
    for (String k : COUNTERS) out.put(k, count(f, at + "." + k, in.getValue(k)));
    Object serial = in.getValue("serial");
    if (serial == null) {
      out.putNull("serial");
    } else if (serial instanceof String s && !s.isEmpty() && s.length() <= 40
        && s.chars().allMatch(c -> c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
      out.put("serial", s);
    } else {
      f.error(at + ".serial", "must be null or the certificate's serial as 1-40 lower-case hex digits");
    }
    Object notAfter = in.getValue("not_after");
    if (notAfter == null) {
      out.putNull("not_after");
    } else if ((notAfter instanceof Integer || notAfter instanceof Long) && ((Number) notAfter).longValue() >= 0
        && ((Number) notAfter).longValue() <= MAX_NOT_AFTER) {
      out.put("not_after", ((Number) notAfter).longValue());
    } else {
      f.error(at + ".not_after", "must be null or when the certificate served expires, as whole seconds since the Unix epoch");
    }
    certificateError(f, in, out, at, "acme_error", "ACME");
    certificateError(f, in, out, at, "meshca_error", "MeshCA");
    JsonObject classes = new JsonObject();
    Object sc = in.getValue("status_classes");
    if (sc != null && !(sc instanceof JsonObject)) {
      f.error(at + ".status_classes", "must be an object of 2xx, 3xx, 4xx and 5xx counts");
    } else {
      JsonObject c = sc == null ? new JsonObject() : (JsonObject) sc;
      for (String k : CLASSES) classes.put(k, count(f, at + ".status_classes." + k, c.getValue(k)));
    }
    out.put("status_classes", classes);
    if (in.getValue("waf") != null) out.put("waf", WafReport.counters(f, at + ".waf", in.getValue("waf")));
    return out;
  }

  static long count(Fields f, String field, Object v) {
    if (v == null) return 0;
    if (!(v instanceof Integer || v instanceof Long) || ((Number) v).longValue() < 0) {
      f.error(field, "must be a whole number >= 0");
      return 0;
    }
    return ((Number) v).longValue();
  }

  /** {@code key}: null, or the last failure to obtain the route's certificate from {@code source}, bounded and printable. */
  private static void certificateError(Fields f, JsonObject in, JsonObject out, String at, String key, String source) {
    Object error = in.getValue(key);
    if (error == null) {
      out.putNull(key);
    } else if (error instanceof String s && !s.isBlank() && s.length() <= MAX_ACME_ERROR && s.chars().noneMatch(Character::isISOControl)) {
      out.put(key, s);
    } else {
      f.error(at + "." + key, "must be null or the last " + source + " failure as 1-" + MAX_ACME_ERROR + " characters without control characters");
    }
  }
}
