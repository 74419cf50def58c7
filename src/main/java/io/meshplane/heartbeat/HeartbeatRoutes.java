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
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * {@code POST /nodes/{id}/heartbeat} under the machines' API (SPEC §5), the hot path: token from the verifier's cache, strict
 * validation, then the live state goes into the cluster map through this event loop's
 * {@link HeartbeatBatcher}. No PostgreSQL, no blocking call.
 */
public final class HeartbeatRoutes {
  private static final JsonArray EMPTY = new JsonArray();

  private HeartbeatRoutes() {}

  public static void mount(Api api, HeartbeatBatcher batcher, MeshMetrics metrics, long intervalSeconds) {
    String[] tails = tails(intervalSeconds);
    api.route(POST, "/nodes/{id}/heartbeat", Permission.HEARTBEAT, "node.heartbeat", "node", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!id.equals(caller.nodeId())) {
        String target = Ids.looksLike("nd", id) ? id : null;
        return api.refuse(ctx, caller, "node.heartbeat", target == null ? null : "node", target,
            Refusal.forbidden("this credential belongs to another node"), true);
      }
      HeartbeatRequest hb = HeartbeatRequest.parse(JsonBodies.object(ctx));
      long now = System.currentTimeMillis();
      LiveNode live = new LiveNode(now, true, orEmpty(hb.endpoints()), hb.publicKey() == null ? "" : hb.publicKey(),
          hb.relay() == null ? "" : hb.relay(), orEmpty(hb.routes()), hb.telemetry());
      return batcher.submit(id, live)
          .recover(t -> Future.failedFuture(Refusal.unavailable("the live state could not be stored; retry")))
          .map(v -> {
            metrics.heartbeats.increment();
            // Everything after server_time is the same for every heartbeat of an idle fleet (until the
            // policy and operations features fill peers, acl, ingress and commands): encoded once.
            String rest = tails[(hb.knownPeers() == 0 ? 1 : 0) + (hb.knownAcl() == 0 ? 2 : 0)];
            ctx.response().putHeader("Content-Type", "application/json")
                .end("{\"server_time\":\"" + Times.formatMillis(now) + "\"," + rest);
            return null;
          });
    });
  }

  /**
   * The answer after {@code server_time}, for the four combinations of "the agent's peers/acl
   * versions are current": index bit 0 = peers unchanged, bit 1 = acl unchanged. Peers and ACL come
   * with the policy feature; until then version 0 and empty sets.
   */
  private static String[] tails(long intervalSeconds) {
    String[] out = new String[4];
    for (int i = 0; i < 4; i++) {
      String encoded = new JsonObject()
          .put("interval_s", intervalSeconds)
          .put("relay", "")
          .put("peers", (i & 1) != 0 ? unchanged() : new JsonObject().put("version", 0).put("items", EMPTY))
          .put("acl", (i & 2) != 0 ? unchanged() : new JsonObject().put("version", 0).put("rules", EMPTY))
          .put("ingress", EMPTY)
          .put("commands", EMPTY)
          .encode();
      out[i] = encoded.substring(1);
    }
    return out;
  }

  private static JsonObject unchanged() {
    return new JsonObject().put("version", 0).put("unchanged", true);
  }

  private static String[] orEmpty(String[] a) {
    return a == null ? new String[0] : a;
  }
}
