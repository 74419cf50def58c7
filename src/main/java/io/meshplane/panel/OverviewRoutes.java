package io.meshplane.panel;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Refusal;
import io.meshplane.common.Times;
import io.meshplane.http.Api;
import io.meshplane.http.Query;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * {@code GET /overview}: the dashboard's first page in one call, within the caller's boundary: nodes
 * by status, the few nodes that went stale last and the first few drifting from their policy,
 * operations in flight, and the heartbeat rate. {@code GET /overview/series}: the charts' figures over
 * the last hour or day ({@link SeriesSampler}). The numbers come from the features' own readers
 * ({@link PanelModule.Sources}); the panel only puts them side by side.
 */
final class OverviewRoutes {
  /** How many stale and drifting nodes the overview lists (the page links to the full lists). */
  static final int LISTED = 5;

  private OverviewRoutes() {}

  static void mount(Api api, PanelModule.Sources sources, SeriesSampler series) {
    api.route(GET, "/overview", Permission.NODES_READ, "overview.read", null, (ctx, caller) -> {
      Future<JsonObject> nodes = sources.nodeCounts().apply(caller);
      // the stale list is a second scan of the boundary's rows: only when the counts found stale nodes
      Future<JsonArray> stale = nodes.compose(c -> c.getLong("stale", 0L) == 0 ? Future.succeededFuture(new JsonArray())
          : sources.staleFirst().apply(caller, LISTED));
      Future<Long> ops = sources.operationsInFlight().apply(caller);
      Future<PanelModule.Drift> drift = sources.drifting().apply(caller.boundary(), LISTED);
      // the names of the first drifting nodes, from the node feature (a node deleted in between is left out)
      Future<JsonArray> drifting = drift.compose(d -> sources.nodeBriefs().apply(caller, d.first()));
      Future<Double> measured = everything(caller) ? series.clusterRate() : Future.succeededFuture(0.0);
      return Future.all(nodes, stale, ops, drift, drifting, measured).map(all -> {
        JsonObject counts = nodes.result();
        // the measured rate is the whole mesh's: shown as such to callers who see the whole mesh; a
        // narrower caller gets its own nodes' expected rate (online nodes / heartbeat interval)
        double hbps = everything(caller) ? measured.result() : counts.getLong("online") / (double) sources.heartbeatIntervalSeconds();
        Responses.ok(ctx, new JsonObject()
            .put("nodes", counts)
            .put("stale_nodes", stale.result())
            .put("operations_in_flight", ops.result())
            .put("policy_drift", drift.result().count())
            .put("drifting_nodes", drifting.result())
            .put("heartbeats_per_second", Math.round(hbps * 10) / 10.0)
            .put("heartbeats_per_second_source", everything(caller) ? "measured" : "estimated")
            .put("at", Times.format(Times.now())));
        return null;
      });
    });

    api.route(GET, "/overview/series", Permission.NODES_READ, "overview.series", null, Query.of("window"), (ctx, caller) -> {
      String name = ctx.queryParams().get("window");
      SeriesSampler.Window w = series.window(name == null ? "1h" : name);
      if (w == null) throw Refusal.invalid("window", "must be 1h or 24h");
      if (!everything(caller)) {
        long last = Math.floorDiv(System.currentTimeMillis(), w.stepMs()) - 1;
        Responses.ok(ctx, SeriesMerge.withheld(w.name(), w.stepMs(), w.points(), last));
        return Future.succeededFuture();
      }
      return series.series(w).map(answer -> {
        Responses.ok(ctx, answer);
        return null;
      });
    });
  }

  private static boolean everything(Caller caller) {
    return Boundary.ALL.equals(caller.boundary().team()) && Boundary.ALL.equals(caller.boundary().environment());
  }
}
