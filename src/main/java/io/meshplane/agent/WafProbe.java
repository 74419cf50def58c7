package io.meshplane.agent;

import io.meshplane.waf.Waf;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;

/**
 * The probe of a traffic policy version (API.md §20, "Probe"): once a version is applied, the edge sends
 * a request through its own ingress listener, to the first route's hostname and path prefix, carrying
 * each held version's nonce in {@link Waf#PROBE_HEADER}. The probe rule every version carries refuses it
 * (403 {@code waf_probe}, naming the version in {@code X-Meshplane-Waf-Version}) only when that version
 * is in the request path: the answer proves it end to end, through the same listener and handler as
 * real traffic. The result goes to the coordinator with the next heartbeat ({@code waf.probe}).
 */
final class WafProbe {
  private WafProbe() {}

  /** Probes what the edge holds now; completes (never fails) once the result is recorded, or at once when there is nothing to probe. */
  static Future<Void> run(IngressEdge edge) {
    EdgeWaf waf = edge.waf();
    EdgeWaf.Held held = waf.held();
    IngressRoutes.Route route = edge.table().routes().isEmpty() ? null : edge.table().routes().get(0);
    if (!held.active() || route == null || edge.notReady() != null) return Future.succeededFuture();
    String host = route.hostname().startsWith("*.") ? "waf-probe" + route.hostname().substring(1) : route.hostname();
    Future<String> enforce = held.enforce() == null ? Future.succeededFuture(null) : one(edge, host, route.pathPrefix(), held.enforce());
    Future<String> shadow = held.shadow() == null ? Future.succeededFuture(null) : one(edge, host, route.pathPrefix(), held.shadow());
    return Future.join(enforce, shadow).transform(ar -> {
      String failed = enforce.result() != null ? enforce.result() : shadow.result();
      waf.probed(held.version(), failed == null, failed == null ? 403 : 0, failed);
      return Future.succeededFuture();
    });
  }

  /** Null when the version answered the probe, else why not. */
  private static Future<String> one(IngressEdge edge, String host, String path, EdgeWaf.Part part) {
    RequestOptions o = new RequestOptions().setMethod(HttpMethod.GET).setHost(edge.selfHost()).setPort(edge.plainPort()).setURI(path)
        .putHeader("Host", host).putHeader(Waf.PROBE_HEADER, part.probe()).setTimeout(5_000);
    return edge.client().request(o).compose(r -> r.send().compose(resp -> resp.body().map(b -> {
      String v = resp.getHeader("X-Meshplane-Waf-Version");
      if (resp.statusCode() == 403 && Long.toString(part.version()).equals(v)) return (String) null;
      return "version " + part.version() + ": the probe got " + resp.statusCode() + (v == null ? "" : " from version " + v);
    }))).recover(e -> Future.succeededFuture("version " + part.version() + ": the probe failed: " + e.getMessage()));
  }
}
