package io.meshplane.bulk;

import io.meshplane.audit.AuditLog;
import io.meshplane.http.Api;
import io.meshplane.module.Module;
import io.meshplane.node.NodeActions;
import io.meshplane.ops.OpsModule;
import io.vertx.sqlclient.SqlClient;
import java.time.Duration;

/**
 * Bulk actions on nodes as a module (API.md §8, {@code POST /nodes/bulk}): re-tag, re-key or delete
 * many nodes, each through the inventory's ({@link NodeActions}) or the operations feature's
 * ({@link OpsModule#rekey}) single-node path.
 */
public final class BulkModule implements Module {
  /**
   * @param budget how long one bulk request may take (nodes not reached by then answer {@code failed})
   * @param nodeActionsInFlight per-node actions in flight on the replica, across every bulk
   */
  public record Settings(Duration budget, int nodeActionsInFlight) {
    public static final Settings DEFAULTS = new Settings(BulkService.BUDGET, NodeSlots.DEFAULT);

    public Settings {
      if (budget == null || budget.isNegative()) throw new IllegalArgumentException("budget must be zero or more");
      if (nodeActionsInFlight < 1) throw new IllegalArgumentException("nodeActionsInFlight must be at least 1");
    }
  }

  private final BulkService service;

  public BulkModule(SqlClient pool, AuditLog audit, NodeActions nodes, OpsModule ops) {
    this(pool, audit, nodes, ops, Settings.DEFAULTS);
  }

  public BulkModule(SqlClient pool, AuditLog audit, NodeActions nodes, OpsModule ops, Settings settings) {
    this.service = new BulkService(pool, audit, nodes, ops::rekey, new NodeSlots(settings.nodeActionsInFlight()), settings.budget());
  }

  @Override
  public String name() {
    return "bulk";
  }

  @Override
  public void routes(Api api) {
    BulkRoutes.mount(api, service);
  }

  /** Bulk per-node actions in flight on this replica now (tests; at most the settings' limit). */
  public int nodeActionsInFlight() {
    return service.slots().inFlight();
  }

  /** The most bulk per-node actions ever in flight at once on this replica. */
  public int nodeActionsPeak() {
    return service.slots().peak();
  }
}
