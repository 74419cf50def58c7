package io.meshplane.wafpolicy;

import io.meshplane.audit.AuditLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
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

  public WafPolicyModule(Vertx vertx, Pool pool, AuditLog audit, Cursors cursors, MeterRegistry registry) {
    this.work = new BoundedWork(vertx, "waf", WORK, registry);
    this.service = new WafPolicyService(new WafPolicyRepository(pool), audit, work);
    this.cursors = cursors;
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
