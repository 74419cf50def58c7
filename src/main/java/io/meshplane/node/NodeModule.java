package io.meshplane.node;

import io.meshplane.audit.AuditLog;
import io.meshplane.auth.AgentCredentials;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;

/** The node inventory as a module: enrollment, reads, deletion, and the node-change events every replica hears. */
public final class NodeModule implements Module {
  private final NodeService service;
  private final NodeEvents events;
  private final Cursors cursors;

  public NodeModule(Pool pool, Pool reads, AgentCredentials credentials, AuditLog audit, LiveNodes live, NodeEvents events, NodePolicy policy,
      Relays relays, Cursors cursors, String addressPool) {
    this.events = events;
    this.cursors = cursors;
    this.service = new NodeService(pool, new NodeRepository(pool, reads), credentials, audit, live, events, policy, relays, addressPool);
  }

  @Override
  public String name() {
    return "nodes";
  }

  @Override
  public Future<Void> start() {
    return events.ready();
  }

  @Override
  public void routes(Api api) {
    NodeRoutes.mount(api, service, cursors);
  }

  public NodeService service() {
    return service;
  }

  public NodeEvents events() {
    return events;
  }
}
