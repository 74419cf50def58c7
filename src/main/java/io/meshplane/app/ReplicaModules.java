package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.AuditModule;
import io.meshplane.auth.AuthModule;
import io.meshplane.auth.SigningKeys;
import io.meshplane.bulk.BulkModule;
import io.meshplane.changes.ChangesModule;
import io.meshplane.heartbeat.HeartbeatModule;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.node.NodeModule;
import io.meshplane.observe.Observability;
import io.meshplane.ops.OpsModule;
import io.meshplane.panel.PanelModule;
import io.meshplane.policy.PolicyModule;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.util.List;

/**
 * The replica's feature modules, built once PostgreSQL is open: each gets the slice of the replica it
 * needs. They meet through the change log (appended, announced, followed) and narrow interfaces, never
 * through each other's insides; this class is the one place that knows which module gets what.
 */
final class ReplicaModules {
  final ChangesModule changes;
  final AuditModule audit;
  final AuthModule auth;
  final PolicyModule policy;
  final OpsModule ops;
  final io.meshplane.ingress.IngressModule ingress;
  // assigned once, in the constructor; not final because modules built before them read them at call time
  HeartbeatModule heartbeat;
  final io.meshplane.watch.WatchModule watch;
  NodeModule nodes;
  final PanelModule panel;
  final BulkModule bulk;
  final io.meshplane.meshca.MeshcaModule meshca;
  final io.meshplane.wafpolicy.WafPolicyModule waf;
  /** Owner affinity (the heartbeat feature's): heartbeat answers carry it, and the watch stream's answers are to. */
  final io.meshplane.node.OwnerHint ownerHint;
  /**
   * In the order they start and mount routes; stopped in reverse. The change log loads its followers
   * (the peer model, the operations board) and starts first, then policy and operations, before the
   * heartbeat route is served: answers come from the model and the board.
   */
  final List<Module> all;

  /**
   * @param p the pool for the features' writes and point reads
   * @param reads lists and counts whose cost grows with the data: connections of their own, each
   *     statement under postgres.read_timeout
   */
  ReplicaModules(MeshConfig config, Vertx vertx, HazelcastInstance hz, Pool p, Pool reads, SigningKeys keys, Observability observability,
      Cursors cursors) {
    changes = new ChangesModule(vertx, p, observability.mesh().registry());
    audit = new AuditModule(p, reads, cursors);
    auth = new AuthModule(vertx, hz, p, reads, keys, audit.log(), observability.mesh(), cursors,
        new AuthModule.Settings(config.issuer(), config.tokensMaxLifetime()));
    // policy records its drift events in the heartbeat feature's journal (built after it): asked at call time
    policy = new PolicyModule(vertx, hz, p, changes, (eventId, nodeId) -> heartbeat.drift(eventId, nodeId), audit.log(),
        observability.mesh(), cursors, config.policyWork());
    // operations answer with the node record, which the node feature (built last) reads: asked at call time
    ops = new OpsModule(vertx, p, reads, audit.log(), changes, (caller, id) -> nodes.service().get(caller, id), config.relays(),
        observability.mesh(), cursors, config.operationsDeadline());
    // ingress routes follow the change log after the policy and operations (a target's services come from work entries);
    // a route's reachability is the policy feature's check
    ingress = new io.meshplane.ingress.IngressModule(vertx, hz, p, reads, audit.log(), changes, cursors, policy::reach,
        observability.mesh().registry(), () -> heartbeat.liveNodes(), io.meshplane.wafpolicy.WafPolicyModule::inForce, config.gaugeInterval());
    // MeshCA follows the change log (its revocation list) and records in the audit trail
    meshca = new io.meshplane.meshca.MeshcaModule(vertx, hz, p, reads, changes, audit.log(), cursors, observability.mesh().registry(),
        config.meshca(), () -> heartbeat.liveNodes(), config.gaugeInterval());
    // traffic policies: versioned documents checked by the WAF's own compiler and tests, on a pool of their own
    // their samples come from the ingress nodes' reports: which nodes from the ingress book, the reports from the live state (asked at call time)
    waf = new io.meshplane.wafpolicy.WafPolicyModule(vertx, p, audit.log(), changes, cursors, observability.mesh().registry(),
        new io.meshplane.wafpolicy.WafPolicyModule.Edges() {
          @Override
          public List<String> nodes(String team, String environment, int max) {
            return ingress.servingNodes(team, environment, max);
          }

          @Override
          public io.vertx.core.Future<java.util.Map<String, String>> reports(java.util.Set<String> ids) {
            return heartbeat.liveNodes().getAll(ids).map(live -> {
              java.util.Map<String, String> out = new java.util.HashMap<>();
              live.forEach((id, l) -> out.put(id, l.wafSamples()));
              return out;
            });
          }
        });
    heartbeat = new HeartbeatModule(vertx, hz, p, reads, changes, policy, ops, meshca.nodePki(), ingress, observability.mesh(), cursors,
        new HeartbeatModule.Settings(
        config.heartbeatInterval(), config.staleAfter(), config.flushInterval(), config.writeBehindMaxBacklog(), config.pendingTtl()));
    ownerHint = heartbeat.ownerHint();
    // after the policy and operations features: its follower of the change log sees each entry after theirs
    watch = new io.meshplane.watch.WatchModule(vertx, hz, changes, policy, ops, meshca.nodePki(), ingress, ownerHint,
        observability.mesh().registry(), config.watch());
    auth.onDenied(watch::credentialDenied);
    // a deletion revokes the node's certificates (MeshCA's) in its transaction
    nodes = new NodeModule(p, reads, auth.agentCredentials(), audit.log(), heartbeat.liveNodes(), changes, policy, meshca.nodePki(),
        config.relays(), cursors, config.addressPool());
    nodes.service().ingress(ingress);
    // bulk actions go through the inventory's and the operations' single-node paths, with at most a quarter
    // of the main pool's connections (4 at the default 16) held by their per-node actions
    bulk = new BulkModule(p, audit.log(), nodes.service(), ops,
        new BulkModule.Settings(BulkModule.Settings.DEFAULTS.budget(), Math.max(1, config.postgresPoolSize() / 4)));
    // the panel reads the overview's numbers from the features through these functions, knowing none of them
    long intervalSeconds = Math.max(1, config.heartbeatInterval().toSeconds());
    io.micrometer.core.instrument.Counter heartbeats = observability.mesh().heartbeats;
    panel = new PanelModule(vertx, hz, p, audit.log(), observability.mesh(), cursors, config.panel(), new PanelModule.Sources(
        caller -> nodes.service().counts(caller),
        () -> nodes.service().counts(io.meshplane.access.Boundary.EVERYTHING),
        (caller, limit) -> nodes.service().staleFirst(caller, limit),
        ops::inFlight,
        (boundary, limit) -> policy.drifting(boundary, limit).map(d -> new PanelModule.Drift(d.count(), d.first())),
        (caller, ids) -> nodes.service().briefs(caller, ids),
        () -> (long) heartbeats.count(),
        () -> new long[] {ops.outcomes().succeeded(), ops.outcomes().failed(), ops.outcomes().expired()},
        intervalSeconds));
    all = List.of(changes, policy, ops, ingress, meshca, waf, heartbeat, watch, auth, nodes, bulk, audit, panel);
  }
}
