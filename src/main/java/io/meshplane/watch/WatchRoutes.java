package io.meshplane.watch;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Caller;
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
    api.route(GET, "/nodes/{id}/watch", Permission.HEARTBEAT, "node.watch", "node", Query.of("peers", "acl"), (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!id.equals(caller.nodeId())) {
        return api.refuse(ctx, caller, "node.watch", Ids.looksLike("nd", id) ? "node" : null, Ids.looksLike("nd", id) ? id : null,
            Refusal.forbidden("this credential belongs to another node"), true);
      }
      List<Refusal.FieldError> errors = new ArrayList<>();
      long peers = version(ctx, "peers", errors);
      long acl = version(ctx, "acl", errors);
      if (!errors.isEmpty()) return Future.failedFuture(Refusal.invalid(errors));
      return open(hub, ctx, caller, id, peers, acl);
    });
  }

  private static Future<Void> open(WatchHub hub, RoutingContext ctx, Caller caller, String id, long peers, long acl) {
    return hub.open(ctx.request(), caller, id, peers, acl);
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
