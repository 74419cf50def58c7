package io.meshplane.policy;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeJournal;
import io.meshplane.node.NodePolicy;
import io.meshplane.observe.MeshMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToDoubleFunction;
import org.slf4j.LoggerFactory;

/**
 * ACL policy, peer sets and per-node firewall rules as a module (API.md §10, §11): the {@code /acl} routes,
 * this replica's {@link PeerModel}, a follower of the change log ({@link PeerFollower}), and the
 * {@link NodePolicy} door through which the heartbeat and the inventory ask their questions.
 */
public final class PolicyModule implements Module, NodePolicy {
  static final String DRIFT_MAP = "meshplane.policy.drift";

  private final Vertx vertx;
  private final PeerModel model = new PeerModel();
  private final ChangeLog.Feed changes;
  private final PolicyService service;
  private final BoundedWork previews;
  private final BoundedWork updates;
  private final Cursors cursors;
  private final DriftWatch drift;
  private final AtomicInteger driftLocal = new AtomicInteger();
  private final IMap<String, Long> driftMap;
  private long driftTimer = -1;

  /**
   * @param work the limits of this replica's policy work pools (tests, previews and compile estimates
   *     run there, never on an event loop): one for previews, one for updates, so that read-only
   *     previews (a monitoring token's) can never take the slots a policy update needs
   */
  public PolicyModule(Vertx vertx, HazelcastInstance hz, Pool pool, ChangeLog.Feed changes, NodeJournal journal, AuditLog audit,
      MeshMetrics metrics, Cursors cursors, BoundedWork.Limits work) {
    this.vertx = vertx;
    this.changes = changes;
    this.cursors = cursors;
    this.previews = new BoundedWork(vertx, "policy", work, metrics.registry());
    this.updates = new BoundedWork(vertx, "policy-update", work, metrics.registry());
    this.service = new PolicyService(vertx, pool, new PolicyRepository(pool), audit, changes, model, previews, updates);
    this.driftMap = hz.getMap(DRIFT_MAP);
    this.drift = new DriftWatch(vertx, driftMap, journal);
    changes.follow(new PeerFollower(model, drift::forget));
    metrics.policyDriftFrom(driftLocal::get);
    register(metrics.registry());
  }

  private void register(MeterRegistry r) {
    counter(r, "mesh.policy.peer.answers", "kind", "full", m -> m.fullPeerAnswers.sum(), "Peers blocks answered in full or as a delta, by kind");
    counter(r, "mesh.policy.peer.answers", "kind", "delta", m -> m.deltaPeerAnswers.sum(), "Peers blocks answered in full or as a delta, by kind");
    counter(r, "mesh.policy.unchanged.answers", null, null, m -> m.unchangedAnswers.sum(),
        "Heartbeat answers whose peers and acl were both unchanged (O(1))");
    counter(r, "mesh.policy.peer.entries.encoded", null, null, m -> m.peerEntriesEncoded.sum(),
        "Peer entries encoded to JSON (once per change of a node)");
    counter(r, "mesh.policy.peer.entries.sent", null, null, m -> m.peerEntriesSent.sum(), "Peer entries written into answers");
    counter(r, "mesh.policy.class.builds", null, null, m -> m.classBuilds.sum(), "Peer classes computed (peer set and rules)");
    Gauge.builder("mesh.policy.classes", model, m -> m.classCount()).description("Peer classes held by this replica's model").register(r);
  }

  private void counter(MeterRegistry r, String name, String tag, String value, ToDoubleFunction<PeerModel> f, String help) {
    FunctionCounter.Builder<PeerModel> b = FunctionCounter.builder(name, model, f).description(help);
    if (tag != null) b = b.tag(tag, value);
    b.register(r);
  }

  @Override
  public String name() {
    return "policy";
  }

  /** The model was loaded with the change log's other followers (the changes module's load); say what it holds. */
  @Override
  public void load() {
    LoggerFactory.getLogger(PolicyModule.class).info("peer model at change {}: {} nodes, {} classes", changes.position(), model.nodeCount(),
        model.classCount());
  }

  @Override
  public Future<Void> start() {
    return vertx.executeBlocking(() -> {
      drift.follow();
      return null;
    }, false).map(v -> {
      driftTimer = vertx.setPeriodic(5000, t -> vertx.executeBlocking(() -> driftMap.localKeySet().size(), false)
          .onSuccess(driftLocal::set));
      return null;
    });
  }

  @Override
  public void routes(Api api) {
    PolicyRoutes.mount(api, service, cursors);
  }

  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(driftTimer);
    previews.close();
    updates.close();
    return Future.succeededFuture();
  }

  /**
   * An ingress route's reachability check (API.md §18): whether the current policy of team/env lets
   * {@code tag} reach node {@code target} on proto/port, on the preview pool. Completes with
   * {@code {policy_version, missing}} (missing: null, or the sentence naming the grant that is missing).
   */
  public Future<JsonObject> reach(io.meshplane.access.Caller caller, String team, String env, String tag, String target, String proto,
      int port) {
    return service.reach(caller, new PolicyService.Scope(team, env), tag, target, proto, port);
  }

  public PolicyService service() {
    return service;
  }

  /** How many nodes of a boundary drift from their policy now, and the first of them in id order (enrollment order). */
  public record Drifting(int count, List<String> first) {}

  /**
   * Nodes of the boundary that are drifting now (claims of the cluster-wide drift map, placed by this
   * replica's model) and the ids of the first {@code limit} of them: the panel's overview. The claims
   * are few (a drifting node is an incident; at most one per node), so reading their keys is cheap;
   * done off the event loop since the map call blocks. The ids kept are bounded by {@code limit}.
   */
  public Future<Drifting> drifting(io.meshplane.access.Boundary boundary, int limit) {
    int keep = Math.max(0, Math.min(limit, 100));
    return vertx.executeBlocking(() -> {
      int n = 0;
      java.util.TreeSet<String> first = new java.util.TreeSet<>();
      for (String id : driftMap.keySet()) {
        PeerDomain d = model.domainOf(id);
        if (d == null || !boundary.covers(d.team, d.env)) continue;
        n++;
        if (keep == 0) continue;
        if (first.size() < keep) {
          first.add(id);
        } else if (id.compareTo(first.last()) < 0) {
          first.pollLast();
          first.add(id);
        }
      }
      return new Drifting(n, List.copyOf(first));
    }, false);
  }

  // ---- NodePolicy ----

  @Override
  public void answer(String nodeId, long knownPeers, long knownAcl, Buffer out) {
    long acl = model.answer(nodeId, knownPeers, knownAcl, out);
    drift.observe(nodeId, knownAcl, acl);
  }

  @Override
  public long[] versions(String nodeId) {
    return model.versions(nodeId);
  }

  @Override
  public long[] streamParts(String nodeId, long knownPeers, long knownAcl, java.util.Map<Object, Object> shared, List<Buffer> parts) {
    return model.streamParts(nodeId, knownPeers, knownAcl, shared, parts);
  }

  @Override
  public List<String> aclMatches(String nodeId) {
    return model.matches(nodeId);
  }

  @Override
  public JsonObject sync(String nodeId, long ackPeers, long ackAcl) {
    long[] v = model.versions(nodeId);
    long peers = v == null ? 0 : v[0];
    long acl = v == null ? 0 : v[1];
    boolean current = ackPeers >= peers && ackAcl >= acl;
    return new JsonObject()
        .put("state", current ? "current" : "behind")
        .put("acknowledged", new JsonObject().put("peers", ackPeers < 0 ? null : ackPeers).put("acl", ackAcl < 0 ? null : ackAcl))
        .put("current", new JsonObject().put("peers", peers).put("acl", acl));
  }

  @Override
  public List<String> drifting(int max) {
    return drift.claimed(max);
  }

  @Override
  public String keyHolder(String publicKey) {
    return model.keyHolder(publicKey);
  }

  /** The model (benchmarks and tests read its counters). */
  PeerModel model() {
    return model;
  }
}
