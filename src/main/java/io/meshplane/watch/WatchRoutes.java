package io.meshplane.watch;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Permission;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.http.Api;
import io.meshplane.http.Query;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code GET /nodes/{id}/watch} under the machines' API (API.md §11, "The watch stream"): the node's own
 * agent token only (the heartbeat's rule, refused and audited as {@code node.watch}), the versions the
 * agent holds as {@code peers} and {@code acl}, then the stream is the hub's.
 */
final class WatchRoutes {
  private WatchRoutes() {}

  static void mount(Api api, WatchHub hub) {
    api.route(GET, "/nodes/{id}/watch", Permission.HEARTBEAT, "node.watch", "node", Query.of("peers", "acl", "pki_bundle", "pki_revocations", "ingress"), (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!id.equals(caller.nodeId())) {
        return api.refuse(ctx, caller, "node.watch", Ids.looksLike("nd", id) ? "node" : null, Ids.looksLike("nd", id) ? id : null,
            Refusal.forbidden("this credential belongs to another node"), true);
      }
      List<Refusal.FieldError> errors = new ArrayList<>();
      long peers = version(ctx, "peers", errors);
      long acl = version(ctx, "acl", errors);
      // MeshCA: a stream whose agent holds a bundle or a revocation list carries their changes too
      boolean pki = !ctx.queryParam("pki_bundle").isEmpty() || !ctx.queryParam("pki_revocations").isEmpty();
      long revocations = version(ctx, "pki_revocations", errors);
      String bundle = bundle(ctx, errors);
      String ingress = ingress(ctx, errors);
      if (!errors.isEmpty()) return Future.failedFuture(Refusal.invalid(errors));
      return hub.open(ctx.request(), caller, id, peers, acl, pki ? new WatchStream.Pki(bundle, revocations) : null, ingress);
    });
  }

  /** {@code pki_bundle}: a bundle version as an answer gave it; empty or absent: none held. */
  private static String bundle(RoutingContext ctx, List<Refusal.FieldError> errors) {
    List<String> all = ctx.queryParam("pki_bundle");
    if (all.isEmpty() || all.get(0).isEmpty() && all.size() == 1) return "";
    String v = all.get(0);
    if (all.size() > 1 || v.length() > 64 || !v.chars().allMatch(c -> c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')) {
      errors.add(new Refusal.FieldError("pki_bundle", "must be a bundle version as an answer gave it (1-64 characters a-z, 0-9, -)"));
      return "";
    }
    return v;
  }

  /** {@code ingress}: the ingress routes version the agent applied, as an answer gave it; empty or absent: none. */
  private static String ingress(RoutingContext ctx, List<Refusal.FieldError> errors) {
    List<String> all = ctx.queryParam("ingress");
    if (all.isEmpty() || all.get(0).isEmpty() && all.size() == 1) return "";
    String v = all.get(0);
    if (all.size() > 1 || v.length() > 40 || !v.chars().allMatch(c -> c >= '0' && c <= '9' || c == '.')) {
      errors.add(new Refusal.FieldError("ingress", "must be an ingress routes version as an answer gave it (digits and '.', at most 40)"));
      return "";
    }
    return v;
  }

  /** A version the agent holds: absent is -1 (none sent), as in a heartbeat's {@code known}. */
  private static long version(RoutingContext ctx, String name, List<Refusal.FieldError> errors) {
    List<String> all = ctx.queryParam(name);
    if (all.isEmpty()) return -1;
    String v = all.get(0);
    if (all.size() > 1 || v.isEmpty() || v.length() > 18 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      errors.add(new Refusal.FieldError(name, "must be a whole number >= 0"));
      return -1;
    }
    return Long.parseLong(v);
  }
}
