package io.meshplane.panel;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Permission;
import io.meshplane.common.Times;
import io.meshplane.http.Api;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/**
 * {@code GET /overview}: the dashboard's first page in one call, within the caller's boundary: nodes
 * by status, operations in flight, nodes drifting from their policy, and the heartbeat rate. The
 * numbers come from the features' own readers ({@link PanelModule.Sources}); the panel only puts
 * them side by side.
 */
final class OverviewRoutes {
  private OverviewRoutes() {}

  static void mount(Api api, PanelModule.Sources sources, HeartbeatRate rate) {
    api.route(GET, "/overview", Permission.NODES_READ, "overview.read", null, (ctx, caller) -> {
      Future<JsonObject> nodes = sources.nodeCounts().apply(caller);
      Future<Long> ops = sources.operationsInFlight().apply(caller);
      Future<Integer> drift = sources.drifting().apply(caller.boundary());
      Future<Double> measured = rate.clusterRate();
      return Future.all(nodes, ops, drift, measured).map(all -> {
        JsonObject counts = nodes.result();
        boolean everything = caller.boundary().team().equals("*") && caller.boundary().environment().equals("*");
        // the measured rate is the whole mesh's: shown as such to callers who see the whole mesh; a
        // narrower caller gets its own nodes' expected rate (online nodes / heartbeat interval)
        double hbps = everything ? measured.result() : counts.getLong("online") / (double) sources.heartbeatIntervalSeconds();
        Responses.ok(ctx, new JsonObject()
            .put("nodes", counts)
            .put("operations_in_flight", ops.result())
            .put("policy_drift", drift.result())
            .put("heartbeats_per_second", Math.round(hbps * 10) / 10.0)
            .put("heartbeats_per_second_source", everything ? "measured" : "estimated")
            .put("at", Times.format(Times.now())));
        return null;
      });
    });
  }
}
