package io.meshplane.heartbeat;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.common.Durations;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.node.LiveNodes;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeJournal;
import io.meshplane.node.NodePolicy;
import io.meshplane.node.NodeWork;
import io.meshplane.node.OwnerHint;
import io.meshplane.observe.MeshMetrics;
import io.meshplane.observe.Readiness;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Heartbeats and live state as a module (API.md §11): the heartbeat route (machines' API only), the live
 * map and its view for the inventory ({@link #liveNodes()}), the write-behind, the staleness monitor,
 * the cold-start seeding, the node state events ({@code GET /events}) and the {@code writebehind}
 * readiness check. What peers see that it finds (endpoints, key, first heartbeat, stale and online
 * again) goes into the change log in the statements that write it, and is announced after them.
 */
public final class HeartbeatModule implements Module, NodeJournal {
  private static final Logger LOG = LoggerFactory.getLogger(HeartbeatModule.class);
  /** The most heartbeats one event loop writes to the cluster map in one call. */
  private static final int HEARTBEAT_MAX_BATCH = 2000;

  /** This module's slice of the settings. */
  public record Settings(Duration interval, Duration staleAfter, Duration flushInterval, int maxBacklog, Duration pendingTtl) {}

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final ChangeLog.Feed changes;
  private final MeshMetrics metrics;
  private final Cursors cursors;
  private final Settings settings;
  private final LiveState live;
  private final LiveRepository repository;
  private final LiveView view;
  private final Quarantine quarantine = new Quarantine();
  private final NodePolicy policy;
  private final NodeWork work;
  private final io.meshplane.node.NodePki pki;
  private final io.meshplane.node.NodeIngress ingress;
  private final LiveOwners owners;
  private volatile String writeBehindDeployment;
  private long unconfirmedTimer = -1;
  private volatile StalenessMonitor monitor;
  private volatile WriteBehindVerticle writeBehind;
  private final java.util.concurrent.atomic.AtomicLong unconfirmedChecks = new java.util.concurrent.atomic.AtomicLong();

  /**
   * @param policy where heartbeat answers get their relay, peers and acl
   * @param work where they get services, ingress and commands, and where command results go
   * @param pki where they get the {@code pki} block, and where a CSR goes
   * @param ingress where they get the {@code ingress_routes} block
   */
  public HeartbeatModule(Vertx vertx, HazelcastInstance hz, Pool pool, Pool reads, ChangeLog.Feed changes, NodePolicy policy, NodeWork work,
      io.meshplane.node.NodePki pki, io.meshplane.node.NodeIngress ingress, MeshMetrics metrics, Cursors cursors, Settings settings) {
    this.policy = policy;
    this.ingress = ingress;
    this.pki = pki;
    this.work = work;
    this.vertx = vertx;
    this.hz = hz;
    this.changes = changes;
    this.metrics = metrics;
    this.cursors = cursors;
    this.settings = settings;
    this.live = new LiveState(vertx, hz);
    // a flush that changes a node's key revokes its certificates of the old one (MeshCA's), in the same transaction
    this.repository = new LiveRepository(pool, reads, pki.certificates());
    this.view = new LiveView(live);
    this.owners = new LiveOwners(vertx, hz);
    metrics.quarantinedRowsFrom(quarantine::size);
  }

  @Override
  public String name() {
    return "heartbeat";
  }

  @Override
  public void checks(Readiness readiness) {
    readiness.registerLocal("writebehind", () -> metrics.writeBehindBacklog.get() > settings.maxBacklog()
        ? "write-behind backlog above writebehind.max_backlog" : null, quarantine::details);
  }

  /**
   * Takes the cluster's start time (the first member to get here sets it, so the cold-start grace
   * counts from when heartbeats are served), then deploys the write-behind and the staleness monitor,
   * and seeds the live map from PostgreSQL if this member started the cluster.
   */
  @Override
  public Future<Void> start() {
    long[] start = live.clusterStart(System.currentTimeMillis());
    owners.start();
    Staleness staleness = new Staleness(settings.staleAfter(), start[0]);
    view.staleness(staleness);
    DeploymentOptions worker = new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER);
    writeBehind = new WriteBehindVerticle(live, repository, changes, metrics, quarantine, settings.flushInterval());
    return vertx.deployVerticle(writeBehind, worker)
        .compose(id -> {
          writeBehindDeployment = id;
          monitor = new StalenessMonitor(hz, live, staleness, repository, changes, metrics);
          return vertx.deployVerticle(monitor, worker);
        })
        .map(id -> {
          watchUnconfirmed();
          if (start[1] == 1) {
            LOG.info("this member started the cluster: nothing is declared stale before {}", Durations.format(settings.staleAfter()));
            vertx.executeBlocking(() -> LiveSeed.seed(live, repository), false)
                .onSuccess(n -> LOG.info("live state seeded from PostgreSQL: {} nodes", n))
                .onFailure(t -> LOG.warn("live state not seeded from PostgreSQL: {}", t.getMessage()));
          }
          return null;
        });
  }

  /**
   * The heartbeat route first (Vert.x Web tries routes in order, and every path-parameter route before
   * it would cost each heartbeat one more match), with this event loop's own batcher; then the events.
   */
  @Override
  public void routes(Api api) {
    if (api.forMachines()) {
      HeartbeatBatcher batcher = new HeartbeatBatcher(vertx.getOrCreateContext(), live.map(), HEARTBEAT_MAX_BATCH,
          metrics.heartbeatBatchSize, metrics.heartbeatStoreRetries);
      HeartbeatRoutes.mount(api, new HeartbeatService(batcher, metrics, settings.interval().toSeconds(), owners, policy, work, pki, ingress));
    }
    EventRoutes.mount(api, new EventService(repository), cursors);
  }

  /**
   * Enrollments that never heartbeat within {@code nodes.pending_ttl} are reported once each (event
   * {@code node.enroll_unconfirmed}, counted). Every replica looks, a few times per TTL and at most once
   * a minute; the event table's unique index keeps the report single.
   */
  private void watchUnconfirmed() {
    long every = Math.max(500, Math.min(60_000, settings.pendingTtl().toMillis() / 4));
    boolean[] running = new boolean[1];
    unconfirmedTimer = vertx.setPeriodic(every, t -> {
      if (running[0]) return;
      running[0] = true;
      repository.reportUnconfirmed(java.time.Instant.now().minus(settings.pendingTtl()), 1000)
          .onSuccess(n -> {
            if (n > 0) {
              metrics.enrollUnconfirmed.increment(n);
              LOG.info("{} enrollments without a heartbeat within {} reported (node.enroll_unconfirmed)", n,
                  Durations.format(settings.pendingTtl()));
            }
          })
          .onFailure(e -> LOG.debug("unconfirmed enrollments not checked: {}", e.getMessage()))
          .onComplete(ar -> {
            running[0] = false;
            unconfirmedChecks.incrementAndGet();
          });
    });
  }

  /** How many staleness scans (with their recording step) this replica has completed (tests wait on it instead of sleeping). */
  public long stalenessScans() {
    StalenessMonitor m = monitor;
    return m == null ? 0 : m.scans();
  }

  /** Whether the write-behind still plans its second sweep after a partition gain, as of its last flush (for tests). */
  public boolean resweepPlanned() {
    WriteBehindVerticle w = writeBehind;
    return w != null && w.resweepPlanned;
  }

  /** How many checks for unconfirmed enrollments this replica has completed (tests wait on it instead of sleeping). */
  public long unconfirmedChecks() {
    return unconfirmedChecks.get();
  }

  /** The write-behind's last flush of the entries this member owns (undeployed before Vert.x closes: it needs the pool). */
  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(unconfirmedTimer);
    owners.stop();
    String id = writeBehindDeployment;
    return id == null ? Future.succeededFuture() : vertx.undeploy(id);
  }

  /**
   * Owner affinity: which replica owns a node's live entry, as it advertises itself
   * ({@code cluster.advertise_url}); heartbeat answers carry it, and so may the watch stream's.
   */
  public OwnerHint ownerHint() {
    return owners;
  }

  /** How many times the owner hints were rebuilt (tests wait on it instead of sleeping). */
  public long ownerHintRefreshes() {
    return owners.refreshes();
  }

  /** The inventory's view of the live state. */
  public LiveNodes liveNodes() {
    return view;
  }

  public LiveState live() {
    return live;
  }

  public Quarantine quarantine() {
    return quarantine;
  }

  @Override
  public Future<Void> drift(String eventId, String nodeId) {
    return repository.driftEvent(eventId, nodeId);
  }
}
