package io.meshplane.ingress;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.node.LiveNodes;
import io.meshplane.node.NodeIngress;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Ingress routes as a module (API.md §19, ARCHITECTURE.md "Ingress routes"): the {@code /ingress/routes}
 * routes, this replica's copy of every team+environment's routes (a follower of the change log), and
 * the {@link NodeIngress} door through which heartbeat answers and node records get their
 * {@code ingress_routes} block and {@code ingress_sync}.
 */
public final class IngressModule implements Module, NodeIngress {
  /**
   * The policy feature's check of a route (wired by {@code app}; this feature does not know the policy's
   * classes): whether the current policy of team/env lets {@code tag} reach node {@code target} on
   * proto/port, evaluated off the event loop. Completes with {@code {policy_version, missing}}.
   */
  public interface Reach {
    Future<JsonObject> check(Caller caller, String team, String env, String tag, String target, String proto, int port);
  }

  private final IngressBook book;
  private final IngressService service;
  private final Cursors cursors;
  private final IngressGauges gauges;

  /** @param live the nodes' live state (the heartbeat feature's, built after this one: asked when the gauges sample) */
  public IngressModule(Vertx vertx, HazelcastInstance hz, Pool pool, Pool reads, AuditLog audit, ChangeLog.Feed changes, Cursors cursors,
      Reach reach, MeterRegistry registry, Supplier<LiveNodes> live, Function<SqlClient, Future<List<JsonObject>>> wafInForce,
      java.time.Duration gaugeInterval) {
    this.book = new IngressBook(wafInForce);
    this.cursors = cursors;
    this.service = new IngressService(new IngressRepository(pool, reads), audit, changes, reach);
    this.gauges = new IngressGauges(vertx, hz, registry, book, live, this::wafSync, gaugeInterval);
    changes.follow(book);
  }

  @Override
  public String name() {
    return "ingress";
  }

  /** Starts the gauges' sampler (docs/OPERATIONS.md, "Metrics"). */
  @Override
  public Future<Void> start() {
    gauges.start();
    return Future.succeededFuture();
  }

  @Override
  public Future<Void> stop() {
    gauges.stop();
    return Future.succeededFuture();
  }

  /** The gauges' sampler (tests in this package). */
  IngressGauges gauges() {
    return gauges;
  }

  @Override
  public void routes(Api api) {
    IngressRoutes.mount(api, service, cursors);
  }

  /** The ids of at most {@code max} nodes that serve the team+environment's routes. O(nodes of the mesh): call it off the event loops. */
  public List<String> servingNodes(String team, String environment, int max) {
    return book.servingNodes(team, environment, max);
  }

  // ---- NodeIngress ----

  @Override
  public void answer(String nodeId, String reported, Buffer out) {
    book.answer(nodeId, reported, out);
  }

  @Override
  public JsonObject sync(String nodeId, String acknowledged) {
    return book.sync(nodeId, acknowledged);
  }

  @Override
  public JsonObject wafSync(String nodeId, String report) {
    JsonObject r = report == null || report.isEmpty() ? new JsonObject() : new JsonObject(report);
    JsonObject sync = book.wafVersions(nodeId, r.getString("version"));
    JsonObject probe = r.getJsonObject("probe");
    // the probe proves the current version only: a pass for an older one says nothing of it
    String probeState = probe == null ? "none" : !probe.getString("version", "").equals(sync.getString("current"))
        ? "stale" : Boolean.TRUE.equals(probe.getBoolean("passed")) ? "passed" : "failed";
    return sync.put("enforcing", r.getValue("enforce")).put("shadowing", r.getValue("shadow")).put("error", r.getValue("error"))
        .put("probe", probe == null ? new JsonObject().put("state", "none") : probe.copy().put("state", probeState));
  }

  @Override
  public boolean due(String nodeId, String held) {
    return book.due(nodeId, held);
  }

  @Override
  public String streamPart(String nodeId, String held, Buffer out) {
    return book.streamPart(nodeId, held, out);
  }
}
