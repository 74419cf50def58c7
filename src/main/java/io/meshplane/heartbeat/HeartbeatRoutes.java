package io.meshplane.heartbeat;

import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Permission;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.vertx.core.Future;


/**
 * {@code POST /nodes/{id}/heartbeat} under the machines' API (API.md §11): parses the body strictly and
 * hands it to the {@link HeartbeatService}; a refusal the service names is recorded through the guard
 * (once per window per agent). The hot path: no PostgreSQL, no blocking call.
 */
final class HeartbeatRoutes {
  private HeartbeatRoutes() {}

  static void mount(Api api, HeartbeatService heartbeats) {
    api.route(POST, "/nodes/{id}/heartbeat", Permission.HEARTBEAT, "node.heartbeat", "node", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      try {
        HeartbeatService.own(caller, id);
      } catch (HeartbeatService.Denied d) {
        return denied(api, ctx, caller, d);
      }
      HeartbeatRequest hb = HeartbeatRequest.parse(JsonBodies.object(ctx));
      return heartbeats.accept(caller, id, hb, () -> Api.request(ctx))
          .recover(t -> t instanceof HeartbeatService.Denied d ? denied(api, ctx, caller, d) : Future.failedFuture(t))
          .map(out -> {
            ctx.response().putHeader("Content-Type", "application/json").end(out);
            return null;
          });
    });
  }

  private static <T> Future<T> denied(Api api, io.vertx.ext.web.RoutingContext ctx, io.meshplane.access.Caller caller,
      HeartbeatService.Denied d) {
    return api.refuse(ctx, caller, "node.heartbeat", d.targetId == null ? null : "node", d.targetId, d.refusal, true);
  }
}
