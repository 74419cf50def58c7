package io.meshplane.audit;

import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.vertx.sqlclient.Pool;

/** The audit trail as a module: the log every feature records in (and the guard's denials), and {@code GET /audit}. */
public final class AuditModule implements Module {
  private final AuditLog log;
  private final Cursors cursors;

  public AuditModule(Pool pool, Pool reads, Cursors cursors) {
    this.log = new AuditLog(pool, reads);
    this.cursors = cursors;
  }

  @Override
  public String name() {
    return "audit";
  }

  @Override
  public void routes(Api api) {
    AuditRoutes.mount(api, log, cursors);
  }

  public AuditLog log() {
    return log;
  }
}
