package io.meshplane.node;

import io.meshplane.audit.AuditLog;
import io.meshplane.auth.AgentCredentials;
import io.meshplane.changes.ChangeLog;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.vertx.sqlclient.Pool;

/** The node inventory as a module: enrollment, reads, re-tags and deletion, each a change of the change log. */
public final class NodeModule implements Module {
  private final NodeService service;
  private final Cursors cursors;

  public NodeModule(Pool pool, Pool reads, AgentCredentials credentials, AuditLog audit, LiveNodes live, ChangeLog.Feed changes,
      NodePolicy policy, NodePki pki, Relays relays, Cursors cursors, String addressPool) {
    this.cursors = cursors;
    this.service = new NodeService(pool, new NodeRepository(pool, reads), credentials, audit, live, changes, policy, pki, relays,
        addressPool);
  }

  @Override
  public String name() {
    return "nodes";
  }

  @Override
  public void routes(Api api) {
    NodeRoutes.mount(api, service, cursors);
  }

  public NodeService service() {
    return service;
  }
}
