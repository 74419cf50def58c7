package io.meshplane.policy;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Blocking;
import io.meshplane.common.BoundedWork;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.node.ChangeLog;
import io.meshplane.node.NodeEvents;
import io.meshplane.node.NodePolicy;
import io.meshplane.observe.MeshMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ACL policy, peer sets and per-node firewall rules as a module (API.md §10, §11): the {@code /acl} routes,
 * this replica's {@link PeerModel} kept in step with the change log by the {@link ChangeFeed}, and the
 * {@link NodePolicy} door through which the heartbeat and the inventory ask their questions.
 */
public final class PolicyModule implements Module, NodePolicy, ChangeLog.Feed {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyModule.class);
  /** Every replica's feed polls at once when a change is announced here. */
  static final String ANNOUNCE = "meshplane.changes.appended";
  static final String DRIFT_MAP = "meshplane.policy.drift";

  private final Vertx vertx;
  private final Pool pool;
  private final PeerModel model = new PeerModel();
  private final ChangeFeed feed;
  private final List<ChangeLog.Follower> followers = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final PolicyService service;
  private final BoundedWork previews;
  private final BoundedWork updates;
  private final NodeEvents events;
  private final Cursors cursors;
  private final DriftWatch drift;
  private final AtomicInteger driftLocal = new AtomicInteger();
  private final IMap<String, Long> driftMap;
  private volatile String feedDeployment;
  private long driftTimer = -1;

  /**
   * @param work the limits of this replica's policy work pools (tests, previews and compile estimates
   *     run there, never on an event loop): one for previews, one for updates, so that read-only
   *     previews (a monitoring token's) can never take the slots a policy update needs
   */
  public PolicyModule(Vertx vertx, HazelcastInstance hz, Pool pool, AuditLog audit, NodeEvents events, MeshMetrics metrics, Cursors cursors,
      BoundedWork.Limits work) {
    this.vertx = vertx;
    this.pool = pool;
    this.events = events;
    this.cursors = cursors;
    ChangeLog log = new ChangeLog(pool);
    this.feed = new ChangeFeed(pool, log, model, followers);
    this.previews = new BoundedWork(vertx, "policy", work, metrics.registry());
    this.updates = new BoundedWork(vertx, "policy-update", work, metrics.registry());
    this.service = new PolicyService(pool, new PolicyRepository(pool), audit, this, model, previews, updates,
        () -> vertx.eventBus().publish(ANNOUNCE, null));
    this.driftMap = hz.getMap(DRIFT_MAP);
    this.drift = new DriftWatch(vertx, driftMap, new PolicyRepository(pool));
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
    Gauge.builder("mesh.policy.log.position", model, m -> m.position()).description("Last change-log seq applied by this replica")
        .register(r);
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

  /** The model from a consistent snapshot of PostgreSQL (retried by the caller while it cannot be reached). */
  @Override
  public void load() {
    long t0 = System.nanoTime();
    long seq = Blocking.await(ChangeFeed.loadSnapshot(pool, model, followers), Duration.ofMinutes(2), "loading the peer model");
    LOG.info("peer model loaded at change {}: {} nodes, {} classes, in {} ms", seq, model.nodeCount(), model.classCount(),
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
  }

  @Override
  public Future<Void> start() {
    DeploymentOptions worker = new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER);
    return vertx.executeBlocking(() -> {
      drift.follow();
      return null;
    }, false).compose(v -> vertx.deployVerticle(feed, worker)).compose(id -> {
      feedDeployment = id;
      events.subscribe(e -> {
        feed.poke();
        if (e.type() == NodeEvents.Type.DELETED) e.nodeIds().forEach(drift::forget);
      });
      driftTimer = vertx.setPeriodic(5000, t -> vertx.executeBlocking(() -> driftMap.localKeySet().size(), false)
          .onSuccess(driftLocal::set));
      return vertx.eventBus().consumer(ANNOUNCE, m -> feed.poke()).completion();
    });
  }

  @Override
  public void routes(Api api) {
    PolicyRoutes.mount(api, service, cursors, model);
  }

  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(driftTimer);
    previews.close();
    updates.close();
    String id = feedDeployment;
    return id == null ? Future.succeededFuture() : vertx.undeploy(id);
  }

  public PolicyService service() {
    return service;
  }

  /**
   * Nodes of the boundary that are drifting now (claims of the cluster-wide drift map, placed by this
   * replica's model): the panel's overview. The claims are few (a drifting node is an incident), so
   * reading their keys is cheap; done off the event loop since the map call blocks.
   */
  public Future<Integer> drifting(io.meshplane.access.Boundary boundary) {
    return vertx.executeBlocking(() -> {
      int n = 0;
      for (String id : driftMap.keySet()) {
        PeerModel.Domain d = model.domainOf(id);
        if (d != null && boundary.covers(d.team, d.env)) n++;
      }
      return n;
    }, false);
  }

  // ---- NodePolicy ----

  @Override
  public void answer(String nodeId, long knownPeers, long knownAcl, Buffer out) {
    long acl = model.answer(nodeId, knownPeers, knownAcl, out);
    drift.observe(nodeId, knownAcl, acl);
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
  public String keyHolder(String publicKey) {
    return model.keyHolder(publicKey);
  }

  @Override
  public Future<Void> applied(long seq) {
    Future<Void> f = feed.applied(seq);
    return Future.any(f, vertx.timer(2000)).mapEmpty();
  }

  // ---- ChangeLog.Feed ----

  @Override
  public void follow(ChangeLog.Follower follower) {
    followers.add(follower);
  }

  @Override
  public void announce() {
    vertx.eventBus().publish(ANNOUNCE, null);
  }

  /** The model (benchmarks and tests read its counters). */
  PeerModel model() {
    return model;
  }

  /** The last change-log seq this replica's model has applied. */
  public long position() {
    return model.position();
  }
}
