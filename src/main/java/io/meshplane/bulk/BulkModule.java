package io.meshplane.bulk;

import io.meshplane.audit.AuditLog;
import io.meshplane.http.Api;
import io.meshplane.module.Module;
import io.meshplane.node.NodeActions;
import io.meshplane.ops.OpsModule;
import io.vertx.sqlclient.SqlClient;

/**
 * Bulk actions on nodes as a module (API.md §8, {@code POST /nodes/bulk}): re-tag, re-key or delete
 * many nodes, each through the inventory's ({@link NodeActions}) or the operations feature's
 * ({@link OpsModule#rekey}) single-node path.
 */
public final class BulkModule implements Module {
  private final BulkService service;

  public BulkModule(SqlClient pool, AuditLog audit, NodeActions nodes, OpsModule ops) {
    this.service = new BulkService(pool, audit, nodes, ops::rekey);
  }

  @Override
  public String name() {
    return "bulk";
  }

  @Override
  public void routes(Api api) {
    BulkRoutes.mount(api, service);
  }
}
