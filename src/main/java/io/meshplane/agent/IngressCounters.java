package io.meshplane.agent;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the ingress edge counts per route ({@code requests, errors, active, bytes_in, bytes_out} and the
 * status classes), as the heartbeat reports it: cumulative since the agent started, kept across route
 * versions for every route id still routed (a route dropped from the table is forgotten). Written and
 * read on the agent's one event loop only (the agent's Vert.x has one), so plain fields.
 */
final class IngressCounters {
  /** One route's counts. */
  static final class Route {
    long requests;
    /** Requests the edge answered 502 itself: the target could not be reached or failed mid-answer. */
    long errors;
    /** Requests of this route in flight now. */
    long active;
    long bytesIn;
    long bytesOut;
    final long[] classes = new long[4];
    /** The WAF's counts on this route; null until a policy evaluated one of its requests. */
    Waf waf;

    Waf waf() {
      if (waf == null) waf = new Waf();
      return waf;
    }

    void answered(int status, long in, long out) {
      active--;
      bytesIn += in;
      bytesOut += out;
      if (status >= 200 && status < 600) classes[status / 100 - 2]++;
    }
  }

  /**
   * What the WAF did on one route: requests evaluated, denied by the enforced policy (a rate limit's
   * denials apart), {@code log} rules matched, denials the shadow policy would have made, requests with
   * a rule that failed to evaluate, requests refused because the evaluators were full, and the hits per
   * rule (denials, rate limits, logs; at most {@value #MAX_RULES} rules, the first seen).
   */
  static final class Waf {
    static final int MAX_RULES = 16;
    long evaluated;
    long denied;
    long logged;
    long rateLimited;
    long wouldDeny;
    long errors;
    long busy;
    final Map<String, Long> rules = new java.util.LinkedHashMap<>();

    void hit(String rule) {
      if (rules.containsKey(rule) || rules.size() < MAX_RULES) rules.merge(rule, 1L, Long::sum);
    }

    void write(StringBuilder sb) {
      JsonText.key(sb.append(','), "waf").append('{');
      JsonText.key(sb, "evaluated").append(evaluated).append(',');
      JsonText.key(sb, "denied").append(denied).append(',');
      JsonText.key(sb, "logged").append(logged).append(',');
      JsonText.key(sb, "rate_limited").append(rateLimited).append(',');
      JsonText.key(sb, "would_deny").append(wouldDeny).append(',');
      JsonText.key(sb, "errors").append(errors).append(',');
      JsonText.key(sb, "busy").append(busy).append(',');
      JsonText.key(sb, "rules").append('{');
      boolean first = true;
      for (Map.Entry<String, Long> e : rules.entrySet()) {
        if (!first) sb.append(',');
        first = false;
        JsonText.key(sb, e.getKey()).append(e.getValue());
      }
      sb.append("}}");
    }
  }

  /** The most route counters one heartbeat carries (the coordinator's limit). */
  static final int REPORTED = 64;

  private Map<String, Route> byId = new HashMap<>();

  /** The counts of {@code id}, created when first needed. */
  Route of(String id) {
    return byId.computeIfAbsent(id, k -> new Route());
  }

  /** A new route table is in force: the counts of the ids it keeps stay, the others go (in-flight requests hold their own reference). */
  void keepOnly(List<IngressRoutes.Route> routes) {
    Map<String, Route> kept = new HashMap<>(routes.size() * 2);
    for (IngressRoutes.Route r : routes) kept.put(r.id(), byId.getOrDefault(r.id(), new Route()));
    byId = kept;
  }

  /** The total of requests over the routes held now (tests, the drain's evidence is counted apart). */
  long requests() {
    long n = 0;
    for (Route r : byId.values()) n += r.requests;
    return n;
  }

  /** The most characters of an {@code acme_error} the coordinator takes (API.md §11). */
  static final int ACME_ERROR_MAX = 200;

  /** An ACME failure as the coordinator takes it: control characters as spaces, never blank, at most {@value #ACME_ERROR_MAX} characters. */
  static String reportable(String error) {
    StringBuilder b = new StringBuilder(Math.min(error.length(), ACME_ERROR_MAX));
    for (int i = 0; i < error.length() && b.length() < ACME_ERROR_MAX; i++) {
      char c = error.charAt(i);
      b.append(Character.isISOControl(c) ? ' ' : c);
    }
    // never half a surrogate pair at the cut
    if (b.length() > 0 && Character.isHighSurrogate(b.charAt(b.length() - 1))) b.setLength(b.length() - 1);
    return b.toString().isBlank() ? "ACME failure (no message)" : b.toString();
  }

  /**
   * Appends {@code "ingress_routes":{"version":…,"routes":{id:{…}}}} (a leading comma included) for
   * the routes of {@code table}; {@code serials} gives the serial of the certificate served for a
   * hostname, {@code notAfters} when it expires (epoch ms; reported in seconds), {@code acmeErrors}
   * the last failure to obtain one from ACME and {@code meshcaErrors} from MeshCA (all may lack a hostname).
   */
  void write(StringBuilder sb, IngressRoutes table, Map<String, String> serials, Map<String, Long> notAfters, Map<String, String> acmeErrors,
      Map<String, String> meshcaErrors, EdgeWaf edgeWaf) {
    JsonText.key(sb.append(','), "ingress_routes").append('{');
    JsonText.key(sb, "version");
    JsonText.string(sb, table.version()).append(',');
    JsonText.key(sb, "routes").append('{');
    boolean first = true;
    int written = 0;
    for (IngressRoutes.Route r : table.routes()) {
      // the coordinator takes the counters of at most REPORTED routes (API.md §11): the first ones, in order
      if (written++ == REPORTED) break;
      Route c = of(r.id());
      if (!first) sb.append(',');
      first = false;
      JsonText.string(sb, r.id()).append(":{");
      JsonText.key(sb, "requests").append(c.requests).append(',');
      JsonText.key(sb, "errors").append(c.errors).append(',');
      JsonText.key(sb, "active").append(Math.max(0, c.active)).append(',');
      JsonText.key(sb, "bytes_in").append(c.bytesIn).append(',');
      JsonText.key(sb, "bytes_out").append(c.bytesOut).append(',');
      JsonText.key(sb, "serial");
      String serial = r.acme() || r.meshca() ? serials.get(r.hostname()) : null;
      if (serial == null) sb.append("null");
      else JsonText.string(sb, serial);
      Long notAfter = r.acme() || r.meshca() ? notAfters.get(r.hostname()) : null;
      JsonText.key(sb.append(','), "not_after");
      if (notAfter == null) sb.append("null");
      else sb.append(Math.max(0, notAfter / 1000));
      String acmeError = r.acme() ? acmeErrors.get(r.hostname()) : null;
      if (acmeError != null) {
        JsonText.key(sb.append(','), "acme_error");
        JsonText.string(sb, reportable(acmeError));
      }
      String meshcaError = r.meshca() ? meshcaErrors.get(r.hostname()) : null;
      if (meshcaError != null) {
        JsonText.key(sb.append(','), "meshca_error");
        JsonText.string(sb, reportable(meshcaError));
      }
      JsonText.key(sb.append(','), "status_classes").append('{');
      for (int k = 0; k < 4; k++) {
        if (k > 0) sb.append(',');
        JsonText.key(sb, (k + 2) + "xx").append(c.classes[k]);
      }
      sb.append('}');
      if (c.waf != null) c.waf.write(sb);
      sb.append('}');
    }
    sb.append('}');
    if (edgeWaf != null) edgeWaf.writeReport(sb);
    sb.append('}');
  }
}
