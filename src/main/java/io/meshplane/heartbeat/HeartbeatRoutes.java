package io.meshplane.heartbeat;

import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.auth.Permission;
import io.meshplane.auth.SecuredRoutes;
import io.meshplane.http.ApiError;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Responses;
import io.meshplane.http.Times;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/**
 * {@code POST /v1/nodes/{id}/heartbeat} (SPEC §5), the hot path: token from the verifier's cache, strict
 * validation, then the live state goes into the cluster map through this event loop's
 * {@link HeartbeatBatcher}. No PostgreSQL, no blocking call.
 */
public final class HeartbeatRoutes {
  private static final JsonArray EMPTY = new JsonArray();

  private HeartbeatRoutes() {}

  public static void mount(SecuredRoutes api, HeartbeatBatcher batcher, AuditLog audit, MeshMetrics metrics, long intervalSeconds) {
    api.route(POST, "/v1/nodes/{id}/heartbeat", Permission.HEARTBEAT, "node.heartbeat", "node", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!id.equals(caller.nodeId())) {
        ApiError denied = ApiError.forbidden("this credential belongs to another node");
        String target = io.meshplane.http.Ids.looksLike("nd", id) ? id : null;
        return audit.deniedRepeatable(AuditLog.event(ctx, caller, "node.heartbeat", target == null ? null : "node", target, AuditEvent.DENIED,
            caller.scope().team(), caller.scope().environment())).compose(v -> Future.failedFuture(denied));
      }
      HeartbeatRequest hb = HeartbeatRequest.parse(JsonBodies.object(ctx));
      long now = System.currentTimeMillis();
      LiveNode live = new LiveNode(now, true, orEmpty(hb.endpoints()), hb.publicKey() == null ? "" : hb.publicKey(),
          hb.relay() == null ? "" : hb.relay(), orEmpty(hb.routes()), hb.telemetry());
      return batcher.submit(id, live)
          .recover(t -> Future.failedFuture(ApiError.unavailable("the live state could not be stored; retry")))
          .map(v -> {
            metrics.heartbeats.increment();
            Responses.ok(ctx, new JsonObject()
                .put("server_time", Times.format(Instant.ofEpochMilli(now)))
                .put("interval_s", intervalSeconds)
                .put("relay", "")
                // Peers and ACL come with the policy feature; until then version 0 and empty sets.
                .put("peers", hb.knownPeers() == 0 ? unchanged() : new JsonObject().put("version", 0).put("items", EMPTY))
                .put("acl", hb.knownAcl() == 0 ? unchanged() : new JsonObject().put("version", 0).put("grants", EMPTY))
                .put("ingress", EMPTY)
                .put("commands", EMPTY));
            return null;
          });
    });
  }

  private static JsonObject unchanged() {
    return new JsonObject().put("version", 0).put("unchanged", true);
  }

  private static String[] orEmpty(String[] a) {
    return a == null ? new String[0] : a;
  }
}
