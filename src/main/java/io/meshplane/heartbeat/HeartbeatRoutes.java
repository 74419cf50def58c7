package io.meshplane.heartbeat;

import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Permission;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.Times;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.meshplane.node.NodeKeys;
import io.meshplane.node.NodePolicy;
import io.meshplane.node.NodeWork;
import io.vertx.core.buffer.Buffer;

/**
 * {@code POST /nodes/{id}/heartbeat} under the machines' API (API.md §11), the hot path: token from the verifier's cache, strict
 * validation, then the live state goes into the cluster map through this event loop's
 * {@link HeartbeatBatcher}. No PostgreSQL, no blocking call. The answer's relay, peers and acl come
 * from the policy feature ({@link NodePolicy}), its services, ingress and commands from the operations
 * feature ({@link NodeWork}), which also takes the agent's command results: the heartbeat asks, it
 * does not compute.
 */
public final class HeartbeatRoutes {
  private HeartbeatRoutes() {}

  public static void mount(Api api, HeartbeatBatcher batcher, MeshMetrics metrics, long intervalSeconds, NodePolicy policy,
      NodeWork work) {
    String interval = ",\"interval_s\":" + intervalSeconds + ",";
    api.route(POST, "/nodes/{id}/heartbeat", Permission.HEARTBEAT, "node.heartbeat", "node", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!id.equals(caller.nodeId())) {
        String target = Ids.looksLike("nd", id) ? id : null;
        return api.refuse(ctx, caller, "node.heartbeat", target == null ? null : "node", target,
            Refusal.forbidden("this credential belongs to another node"), true);
      }
      HeartbeatRequest hb = HeartbeatRequest.parse(JsonBodies.object(ctx));
      if (hb.publicKey() != null) {
        // one key per node: a key that is another node's is refused, nothing of this heartbeat is stored
        String holder = policy.keyHolder(hb.publicKey());
        if (holder != null && !holder.equals(id)) {
          if (!hb.commandResults().isEmpty()) work.keyRefused(id, caller, Api.request(ctx), hb.commandResults());
          return api.refuse(ctx, caller, "node.heartbeat", "node", id, NodeKeys.inUse(), true);
        }
      }
      long now = System.currentTimeMillis();
      LiveNode live = new LiveNode(now, true, orEmpty(hb.endpoints()), hb.publicKey() == null ? "" : hb.publicKey(),
          hb.relay() == null ? "" : hb.relay(), orEmpty(hb.routes()), hb.telemetry(), hb.knownPeers(), hb.knownAcl(),
          orEmpty(hb.services()));
      return batcher.submit(id, live)
          .recover(t -> {
            // the map write failed (its partition's owner just died, say): not acknowledged, so the
            // agent's next beat carries the same state; a second is enough for the cluster to take over
            ctx.response().putHeader("Retry-After", "1");
            return Future.failedFuture(Refusal.unavailable("the live state could not be stored; retry"));
          })
          .map(v -> {
            metrics.heartbeats.increment();
            // results are checked against this heartbeat (now stored); completions are written in the background
            if (!hb.commandResults().isEmpty()) {
              work.reported(id, caller, Api.request(ctx), new NodeWork.Report(hb.publicKey(), hb.relay(), hb.ingress(), hb.commandResults()));
            }
            // the policy feature writes relay, peers and acl: O(1) when the agent's versions are current
            Buffer out = Buffer.buffer(256).appendString("{\"server_time\":\"").appendString(Times.formatMillis(now))
                .appendString("\"").appendString(interval);
            policy.answer(id, hb.knownPeers(), hb.knownAcl(), out);
            work.answer(id, out);
            ctx.response().putHeader("Content-Type", "application/json").end(out);
            return null;
          });
    });
  }

  private static String[] orEmpty(String[] a) {
    return a == null ? new String[0] : a;
  }
}
