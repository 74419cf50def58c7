package io.meshplane.agent;

import io.meshplane.common.Ids;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One version of the ingress routes the coordinator gave this node (the heartbeat answer's
 * {@code ingress_routes}): immutable, so a request that picked its route keeps it while a newer version
 * replaces the table (the swap is one reference). Ordered: the first route whose hostname equals the
 * request's host and whose {@code path_prefix} is a segment prefix of its path wins. Routes are grouped
 * by hostname (their order kept) so a request looks only at the routes of its own host.
 */
final class IngressRoutes {
  /** A bound on what one answer may make the agent hold; routes past it are left out (and logged). */
  static final int MAX_ROUTES = 1000;
  static final Pattern HOSTNAME = Pattern.compile("^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$");
  private static final Pattern IPV4 = Pattern.compile("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$");
  private static final Pattern IPV6 = Pattern.compile("^[0-9a-fA-F:.]{2,45}$");
  /** As the coordinator writes versions and accepts them back (API.md §19): digits and dots, at most 40. */
  private static final Pattern VERSION = Pattern.compile("^[0-9.]{1,40}$");

  /**
   * Where a route sends its requests: a node's mesh address and the service's port. {@code unavailable}
   * non-null (the coordinator's {@code target.state}: {@code target_missing}, {@code service_unbound})
   * when there is nowhere to send them: address null, port 0, and the edge answers 502 itself.
   */
  record Target(String node, String service, String address, int port, String unavailable) {}

  /**
   * @param publicExposure {@code exposure: public}: forwarding headers from the client are replaced, not appended to
   * @param acme {@code tls: acme}: the agent obtains a certificate for the hostname and serves it on its TLS listener
   * @param meshca {@code tls: meshca}: the same, from MeshCA ({@link IngressMeshca})
   */
  record Route(String id, String hostname, String pathPrefix, boolean publicExposure, boolean acme, Target target, boolean meshca) {}

  /** No routes applied yet: every request gets the catch-all 404. */
  static final IngressRoutes NONE = new IngressRoutes(null, List.of(), List.of());

  private final String version;
  private final List<Route> routes;
  private final Map<String, Route[]> byHost;
  /** Why routes of the block were left out (for one log line), empty when none was. */
  private final List<String> skipped;

  private IngressRoutes(String version, List<Route> routes, List<String> skipped) {
    this.version = version;
    this.routes = List.copyOf(routes);
    this.skipped = List.copyOf(skipped);
    Map<String, List<Route>> grouped = new LinkedHashMap<>();
    for (Route r : routes) grouped.computeIfAbsent(r.hostname(), h -> new ArrayList<>(2)).add(r);
    Map<String, Route[]> m = new LinkedHashMap<>();
    grouped.forEach((h, l) -> m.put(h, l.toArray(new Route[0])));
    this.byHost = Collections.unmodifiableMap(m);
  }

  /**
   * Reads an {@code ingress_routes} block with a route list. A route that is not well formed (id, hostname,
   * path prefix, an IP literal and port as target) is left out and named in {@link #skipped()}; so are
   * routes past {@link #MAX_ROUTES} and a second route of an id already taken.
   *
   * @throws IllegalArgumentException when the block has no usable version or no {@code routes} array
   */
  static IngressRoutes parse(JsonObject block) {
    if (!(block.getValue("version") instanceof String v) || !VERSION.matcher(v).matches()) {
      throw new IllegalArgumentException("ingress_routes.version must be a short string");
    }
    if (!(block.getValue("routes") instanceof JsonArray list)) throw new IllegalArgumentException("ingress_routes.routes must be an array");
    List<Route> out = new ArrayList<>(Math.min(list.size(), MAX_ROUTES));
    List<String> skipped = new ArrayList<>(0);
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      if (out.size() == MAX_ROUTES) {
        skipped.add((list.size() - i) + " routes past " + MAX_ROUTES);
        break;
      }
      Object o = list.getValue(i);
      String why = o instanceof JsonObject j ? invalid(j) : "not an object";
      if (why == null && ids.contains(((JsonObject) o).getString("id"))) why = "a second route with that id";
      if (why != null) {
        skipped.add("routes[" + i + "]: " + why);
        continue;
      }
      Route r = route((JsonObject) o);
      ids.add(r.id());
      out.add(r);
    }
    return new IngressRoutes(v, out, skipped);
  }

  /** Why a route is not well formed, or null. */
  private static String invalid(JsonObject j) {
    if (!Ids.looksLike("ir", j.getValue("id") instanceof String s ? s : null)) return "id must be an ingress route id (ir_…)";
    if (!(j.getValue("hostname") instanceof String h) || !HOSTNAME.matcher(h).matches()) return "hostname must be a lower-case DNS name";
    if (!(j.getValue("path_prefix") instanceof String p) || !p.startsWith("/") || p.length() > 1024) {
      return "path_prefix must start with / (at most 1024 characters)";
    }
    if (!(j.getValue("target") instanceof JsonObject t)) return "target must be an object";
    if (unavailable(t) != null) return null;
    if (!(t.getValue("address") instanceof String a) || !(IPV4.matcher(a).matches() || (a.contains(":") && IPV6.matcher(a).matches()))) {
      return "target.address must be an IP address";
    }
    if (!(t.getValue("port") instanceof Number n) || n.intValue() != n.doubleValue() || n.intValue() < 1 || n.intValue() > 65535) {
      return "target.port must be 1-65535";
    }
    if (t.getValue("proto") != null && !"tcp".equals(t.getValue("proto"))) return "target.proto must be tcp";
    return null;
  }

  private static Route route(JsonObject j) {
    JsonObject t = j.getJsonObject("target");
    String unavailable = unavailable(t);
    Target target = new Target(t.getValue("node") instanceof String n ? n : "", t.getValue("service") instanceof String s ? s : "",
        unavailable == null ? t.getString("address") : null, unavailable == null ? t.getNumber("port").intValue() : 0, unavailable);
    return new Route(j.getString("id"), j.getString("hostname"), j.getString("path_prefix"), !"mesh".equals(j.getValue("exposure")),
        "acme".equals(j.getValue("tls")), target, "meshca".equals(j.getValue("tls")));
  }

  /** A target's {@code state} other than {@code active} (at most 40 characters of a-z and '_'), or null: the target can be dialled. */
  private static String unavailable(JsonObject t) {
    return t.getValue("state") instanceof String s && !"active".equals(s) && s.matches("[a-z_]{1,40}") ? s : null;
  }

  /** The first route of {@code host} (lower-case, no port) whose path prefix is a segment prefix of {@code path}; null: none. */
  Route match(String host, String path) {
    Route[] candidates = byHost.get(host);
    if (candidates == null) return null;
    for (Route r : candidates) if (segmentPrefix(r.pathPrefix(), path)) return r;
    return null;
  }

  /**
   * {@code /api} is a segment prefix of {@code /api} and {@code /api/v1}, not of {@code /apis}; a prefix
   * ending in {@code /} is one of every path that starts with it.
   */
  static boolean segmentPrefix(String prefix, String path) {
    if (!path.startsWith(prefix)) return false;
    return path.length() == prefix.length() || prefix.endsWith("/") || path.charAt(prefix.length()) == '/';
  }

  /**
   * A request path the routes cannot be trusted to match: a {@code .} or {@code ..} segment, plain or
   * percent-encoded (the target would resolve it past the prefix the route matched), or a backslash.
   */
  static boolean unsafePath(String path) {
    if (path == null || path.isEmpty() || path.charAt(0) != '/' || path.indexOf('\\') >= 0) return true;
    int start = 1;
    while (start <= path.length()) {
      int end = path.indexOf('/', start);
      if (end < 0) end = path.length();
      String seg = path.substring(start, end).toLowerCase(Locale.ROOT).replace("%2e", ".");
      if (seg.equals(".") || seg.equals("..") || seg.contains("%2f") || seg.contains("%5c")) return true;
      start = end + 1;
    }
    return false;
  }

  /** The version, or null for {@link #NONE}. */
  String version() {
    return version;
  }

  List<Route> routes() {
    return routes;
  }

  List<String> skipped() {
    return skipped;
  }

  /** The hostnames of the routes with {@code tls: acme}, in order, each once. */
  List<String> acmeHostnames() {
    List<String> out = new ArrayList<>();
    for (Route r : routes) if (r.acme() && !out.contains(r.hostname())) out.add(r.hostname());
    return out;
  }

  /** The hostnames of the routes with {@code tls: meshca}, in order, each once. */
  List<String> meshcaHostnames() {
    List<String> out = new ArrayList<>();
    for (Route r : routes) if (r.meshca() && !out.contains(r.hostname())) out.add(r.hostname());
    return out;
  }
}
