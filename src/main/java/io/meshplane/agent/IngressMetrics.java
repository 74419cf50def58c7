package io.meshplane.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The ingress edge's families of the agent's /metrics ({@code mesh_ingress_*}, docs/OPERATIONS.md
 * "Metrics"), in the rules of {@link AgentMetrics}: HELP and TYPE on every family, counters ending in
 * {@code _total}, base units. Bounded: the per-route families cover the first {@value #ROUTES} routes
 * of the table (the ones the heartbeat reports), the per-hostname ones the first {@value #ROUTES}
 * {@code tls: acme} hostnames. Read on the agent's event loop, where the counters are written.
 */
final class IngressMetrics {
  static final int ROUTES = IngressCounters.REPORTED;
  private static final String[] CLASSES = {"2xx", "3xx", "4xx", "5xx"};

  private IngressMetrics() {}

  /**
   * @param openConnections connections open on the ingress listeners now
   * @param confirmedAtMs when a coordinator's answer last said the routes version in use is current (-1: never)
   */
  static void write(StringBuilder sb, IngressRoutes table, IngressCounters counters, IngressAcme acme, IngressMeshca meshca, int openConnections,
      long confirmedAtMs, long nowMs) {
    List<IngressRoutes.Route> routes = table.routes().size() <= ROUTES ? table.routes() : table.routes().subList(0, ROUTES);
    family(sb, "mesh_ingress_requests_total", "counter",
        "Requests answered by the ingress edge, by route, its hostname and status class (2xx..5xx; the first 64 routes of the table).");
    for (IngressRoutes.Route r : routes) {
      IngressCounters.Route c = counters.of(r.id());
      for (int k = 0; k < 4; k++) {
        sb.append("mesh_ingress_requests_total{route=\"").append(r.id()).append("\",hostname=\"");
        label(sb, r.hostname()).append("\",class=\"").append(CLASSES[k]).append("\"} ").append(c.classes[k]).append('\n');
      }
    }
    family(sb, "mesh_ingress_errors_total", "counter",
        "Requests the ingress edge answered 502 itself (the target could not be reached or failed mid-answer), by route.");
    for (IngressRoutes.Route r : routes) {
      sb.append("mesh_ingress_errors_total{route=\"").append(r.id()).append("\"} ").append(counters.of(r.id()).errors).append('\n');
    }
    family(sb, "mesh_ingress_bytes_total", "counter", "Body bytes through the ingress edge, by route and direction (in: from clients, out: to them).");
    for (IngressRoutes.Route r : routes) {
      IngressCounters.Route c = counters.of(r.id());
      sb.append("mesh_ingress_bytes_total{route=\"").append(r.id()).append("\",direction=\"in\"} ").append(c.bytesIn).append('\n');
      sb.append("mesh_ingress_bytes_total{route=\"").append(r.id()).append("\",direction=\"out\"} ").append(c.bytesOut).append('\n');
    }
    family(sb, "mesh_ingress_active_requests", "gauge", "Requests in flight through the ingress edge, by route.");
    for (IngressRoutes.Route r : routes) {
      sb.append("mesh_ingress_active_requests{route=\"").append(r.id()).append("\"} ").append(Math.max(0, counters.of(r.id()).active)).append('\n');
    }
    family(sb, "mesh_ingress_active_connections", "gauge", "Client connections open on the ingress listeners (plain and TLS).");
    sb.append("mesh_ingress_active_connections ").append(openConnections).append('\n');
    family(sb, "mesh_ingress_routes", "gauge", "Ingress routes in force (the table of the routes version in use).");
    sb.append("mesh_ingress_routes ").append(table.routes().size()).append('\n');
    if (table.version() != null && confirmedAtMs >= 0) {
      family(sb, "mesh_ingress_config_age_seconds", "gauge",
          "Seconds since a coordinator's answer last said the routes version in use is current; absent before the first.");
      sb.append("mesh_ingress_config_age_seconds ").append(seconds(Math.max(0, nowMs - confirmedAtMs))).append('\n');
    }
    List<String> hostnames = acme == null ? List.of() : capped(table.acmeHostnames());
    List<String> meshcaHostnames = capped(table.meshcaHostnames());
    if (acme != null || !meshcaHostnames.isEmpty()) {
      family(sb, "mesh_ingress_certificate_expiry_seconds", "gauge",
          "Seconds until the certificate served for a hostname expires (negative once it has), by hostname and source; a hostname without one is absent.");
      expiries(sb, hostnames, acme == null ? Map.of() : acme.notAfters(), "acme", nowMs);
      expiries(sb, meshcaHostnames, meshca.notAfters(), "meshca", nowMs);
    }
    if (acme == null) return;
    Map<String, Long> failed = acme.failedOrders();
    family(sb, "mesh_ingress_acme_failures_total", "counter",
        "ACME orders that failed, by hostname (counted while the routes want a certificate for it).");
    for (String h : hostnames) {
      label(sb.append("mesh_ingress_acme_failures_total{hostname=\""), h).append("\"} ").append(failed.getOrDefault(h, 0L)).append('\n');
    }
  }

  private static List<String> capped(List<String> hostnames) {
    return hostnames.size() > ROUTES ? new ArrayList<>(hostnames.subList(0, ROUTES)) : hostnames;
  }

  private static void expiries(StringBuilder sb, List<String> hostnames, Map<String, Long> notAfters, String source, long nowMs) {
    for (String h : hostnames) {
      Long notAfter = notAfters.get(h);
      if (notAfter == null) continue;
      label(sb.append("mesh_ingress_certificate_expiry_seconds{hostname=\""), h).append("\",source=\"").append(source).append("\"} ")
          .append(seconds(notAfter - nowMs)).append('\n');
    }
  }

  static void family(StringBuilder sb, String name, String type, String help) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(' ').append(type).append('\n');
  }

  /** A label value, escaped (hostnames are checked when the routes are parsed; escaped all the same). */
  private static StringBuilder label(StringBuilder sb, String v) {
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c == '\\' || c == '"') sb.append('\\').append(c);
      else if (c == '\n') sb.append("\\n");
      else sb.append(c);
    }
    return sb;
  }

  private static String seconds(long ms) {
    return ms % 1000 == 0 ? Long.toString(ms / 1000) : String.format(Locale.ROOT, "%.3f", ms / 1000.0);
  }
}
