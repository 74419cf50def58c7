package io.meshplane.wafpolicy;

import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import java.util.List;
import java.time.Duration;

/**
 * Traffic policies as a module (API.md §20, ARCHITECTURE.md "WAF"): the {@code /waf} routes and the
 * bounded pool that compiles, tests and previews documents ({@code mesh_work_*{pool="waf"}}).
 */
public final class WafPolicyModule implements Module {
  /** One thread: a check is tens of milliseconds; 8 admitted at once, 2 per caller and per team. */
  static final BoundedWork.Limits WORK = new BoundedWork.Limits(1, 8, 2, 2, Duration.ofSeconds(10));
  private final BoundedWork work;
  private final WafPolicyService service;
  private final Cursors cursors;

  /**
   * What this feature asks of the ingress nodes (wired by {@code app}; it knows neither the ingress book
   * nor the live state): which nodes serve a team+environment's routes, and their traffic-policy reports.
   */
  public interface Edges {
    /** The ids of at most {@code max} nodes serving the team+environment's routes. CPU over the replica's nodes: called on this feature's pool. */
    List<String> nodes(String team, String environment, int max);

    /** Each node's last reported samples, as a compact JSON list ("" or absent: none). */
    Future<java.util.Map<String, String>> reports(java.util.Set<String> nodeIds);

    Edges NONE = new Edges() {
      @Override
      public List<String> nodes(String team, String environment, int max) {
        return List.of();
      }

      @Override
      public Future<java.util.Map<String, String>> reports(java.util.Set<String> nodeIds) {
        return Future.succeededFuture(java.util.Map.of());
      }
    };
  }

  public WafPolicyModule(Vertx vertx, Pool pool, AuditLog audit, ChangeLog.Feed changes, Cursors cursors, MeterRegistry registry, Edges edges) {
    this.work = new BoundedWork(vertx, "waf", WORK, registry);
    this.service = new WafPolicyService(new WafPolicyRepository(pool), audit, work, changes, edges);
    this.cursors = cursors;
  }

  /**
   * The policies in force, for a follower of the change log loading from a snapshot (the ingress book):
   * per team+environment, the latest {@code enforce} version and, when a later one is in {@code shadow},
   * that one too, each as a {@code waf} change-log entry's data ({@code team, environment, version, mode,
   * policy}), older first. One pass over the table's index.
   */
  public static Future<List<JsonObject>> inForce(SqlClient snapshot) {
    return WafPolicyRepository.inForce(snapshot);
  }

  @Override
  public String name() {
    return "waf";
  }

  @Override
  public void routes(Api api) {
    WafPolicyRoutes.mount(api, service, cursors);
  }

  @Override
  public Future<Void> stop() {
    work.close();
    return Future.succeededFuture();
  }
}
