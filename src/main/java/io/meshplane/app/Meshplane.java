package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.AuditModule;
import io.meshplane.auth.AuthModule;
import io.meshplane.auth.SigningKeys;
import io.meshplane.common.Blocking;
import io.meshplane.common.Durations;
import io.meshplane.heartbeat.HeartbeatModule;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.Routers;
import io.meshplane.module.Module;
import io.meshplane.node.NodeModule;
import io.meshplane.observe.HazelcastMetrics;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.meshplane.ops.OpsModule;
import io.meshplane.panel.PanelModule;
import io.meshplane.changes.ChangesModule;
import io.meshplane.policy.PolicyModule;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running replica: the wiring point, and only that. It builds the shared services (cluster,
 * PostgreSQL, metrics), hands each feature module the slice it needs, and iterates the modules
 * ({@link Module}): checks, load, start, routes per API and HTTP instance, stop. It knows no feature's
 * insides. A replica starts in two phases, so that an orchestrator's probes get answers from the first
 * second even while PostgreSQL is away:
 *
 * <ol>
 *   <li>{@link #launch} (blocking, on the caller's thread): checks the settings that need no I/O (the
 *       database URL, the signing keys), joins the cluster, and serves both HTTP components with
 *       {@code /healthz} 200, {@code /readyz} 503 naming what is missing, {@code /metrics}, and 503
 *       {@code unavailable} on every other {@code /v1} route;
 *   <li>in the background ({@link #started()} completes after it): opens PostgreSQL, retrying with
 *       backoff while it cannot be reached (each attempt's reason is in {@code /readyz}), migrates it,
 *       builds, loads and starts the modules, and puts the full API in place. A refusal that waiting
 *       cannot fix (wrong password or user, missing database) fails {@link #started()}, and
 *       {@code Main} stops the process with a clear message (exit 2); so does any other failure that is
 *       not about reaching PostgreSQL, such as a failing migration (exit 3).
 * </ol>
 *
 * {@link #close()} is the graceful shutdown: stop accepting, drain in-flight requests, leave the cluster.
 *
 * <p>This class holds the lifecycle (the two phases, close) and the accessors; the modules are built by
 * {@link ReplicaModules}, the HTTP components deployed by {@link HttpComponents}, and the second
 * phase's waiting for PostgreSQL is {@link StartRetry}'s.
 */
public final class Meshplane implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Meshplane.class);
  static final Duration START_TIMEOUT = Duration.ofMinutes(2);
  /** The one /v1 route that needs no token: the API's own description. */
  public static final String OPENAPI_PATH = "/v1/openapi.yaml";
  /** The machines' API: node agents, automation, CI pipelines, with bearer tokens. */
  public static final String COORDINATOR_PREFIX = "/v1";
  /** The people's API: the web panel's, with session cookies; the dashboard is served beside it at {@code /}. */
  public static final String PANEL_PREFIX = "/api/v1";

  private final MeshConfig config;
  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final Observability observability;
  private final Readiness readiness;
  private final SigningKeys keys;
  private final Set<Component> components;
  private final HttpComponents http;
  private final AtomicBoolean deployed = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final StartRetry retry = new StartRetry(closing::get);
  private final Promise<Void> started = Promise.promise();
  private volatile Database database;
  private volatile Pool pool;
  private volatile String installationId;
  private volatile Thread starter;
  /** The feature modules, once the second phase has built them (null before). */
  private volatile ReplicaModules features;
  /** In the order they start and mount routes (the heartbeat's route first); stopped in reverse. */
  private volatile List<Module> modules = List.of();

  private Meshplane(MeshConfig config, Vertx vertx, HazelcastInstance hz, Observability observability, SigningKeys keys, Buffer openApi,
      Set<Component> components) {
    this.config = config;
    this.vertx = vertx;
    this.hz = hz;
    this.observability = observability;
    this.readiness = new Readiness(vertx);
    this.keys = keys;
    this.components = components;
    this.http = new HttpComponents(config, vertx, observability, readiness, openApi, components, () -> pool != null);
  }

  /**
   * Starts a replica and returns once it serves everything (or throws, having released what it had
   * started). Blocking. For tests and tools that need the whole API at once; {@code run} uses
   * {@link #launch}.
   */
  public static Meshplane start(MeshConfig config, Set<Component> components) {
    Meshplane app = launch(config, components);
    try {
      Blocking.await(app.started(), START_TIMEOUT, "starting the replica");
      return app;
    } catch (RuntimeException e) {
      app.close();
      throw e;
    }
  }

  /** The first phase: returns once both HTTP components serve their probes; the rest follows in the background. */
  public static Meshplane launch(MeshConfig config, Set<Component> components) {
    Database.checkUrl(config);
    SigningKeys keys = SigningKeys.loadOrCreate(config.keysDir());
    Buffer openApi = Routers.openApiDocument();
    Observability observability = new Observability();
    HazelcastClusterManager clusterManager = new HazelcastClusterManager(ClusterSetup.hazelcastConfig(config));
    VertxOptions options = observability.applyTo(new VertxOptions());
    if (!config.clusterHost().isEmpty()) options.getEventBusOptions().setHost(config.clusterHost());
    options.getEventBusOptions().setPort(config.clusterEventBusPort());
    Vertx vertx = Blocking.await(Vertx.builder().with(options).withMetrics(observability.metricsFactory())
        .withClusterManager(clusterManager).buildClustered(), START_TIMEOUT, "joining the cluster");
    Meshplane app = null;
    try {
      HazelcastInstance hz = clusterManager.getHazelcastInstance();
      new HazelcastMetrics(hz).bindTo(observability.registry());
      io.vertx.core.spi.cluster.NodeInfo bus = clusterManager.getNodeInfo();
      LOG.info("cluster '{}' joined as {} ({} members); event bus on {}:{}", config.clusterName(),
          hz.getCluster().getLocalMember().getAddress(), hz.getCluster().getMembers().size(),
          bus == null ? "?" : bus.host(), bus == null ? "?" : bus.port());
      app = new Meshplane(config, vertx, hz, observability, keys, openApi, components);
      Meshplane self = app;
      ReplicaChecks.register(app.readiness, () -> self.pool, self.retry::waitingFor, clusterManager, hz, app::deploymentState);
      app.http.deploy();
      app.startInBackground();
      return app;
    } catch (RuntimeException e) {
      if (app != null) {
        app.close();
      } else {
        try {
          Blocking.await(vertx.close(), Duration.ofSeconds(15), "closing Vert.x after a failed start");
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
  }

  private void startInBackground() {
    Thread t = new Thread(() -> {
      try {
        initialise();
        started.tryComplete();
      } catch (Throwable e) {
        if (closing.get()) {
          started.tryFail(new IllegalStateException("the replica was stopped before it had started"));
        } else {
          started.tryFail(e);
        }
      }
    }, "meshplane-start");
    t.setDaemon(true);
    starter = t;
    t.start();
  }

  /** Completes when the replica serves its whole API; fails when the start cannot succeed (see {@link #launch}). */
  public Future<Void> started() {
    return started.future();
  }

  /** The second phase, on its own thread: everything that needs PostgreSQL. */
  private void initialise() throws InterruptedException {
    Database db = Database.open(config);
    database = db;
    if (closing.get()) {
      // close() may have given up waiting for this thread while the embedded PostgreSQL started
      db.close();
      throw new InterruptedException("stopping");
    }
    Database.Meta meta = retry.retrying("migrating PostgreSQL", () -> {
      db.migrate();
      return db.meta();
    });
    installationId = meta.installationId();
    LOG.info("installation {}", installationId);
    Cursors cursors = new Cursors(meta.cursorKey());
    Pool p = db.pool(vertx, config.postgresPoolSize());
    // lists and counts whose cost grows with the data: connections of their own, each statement under postgres.read_timeout
    Pool reads = db.readPool(vertx, config.postgresReadPoolSize(), config.postgresReadTimeout());
    ReplicaModules f = new ReplicaModules(config, vertx, hz, p, reads, keys, observability, cursors);
    features = f;
    for (Module m : f.all) m.checks(readiness);
    pool = p;
    for (Module m : f.all) {
      retry.retrying("loading " + m.name(), () -> {
        m.load();
        return null;
      });
    }
    modules = f.all;
    for (Module m : f.all) Blocking.await(m.start(), START_TIMEOUT, "starting " + m.name());
    if (closing.get()) throw new InterruptedException("stopping");

    Blocking.await(http.install(f), START_TIMEOUT, "installing the API routes");
    deployed.set(true);
    LOG.info("ready: {} served", components.size() == 2 ? "the coordinator API and the web panel are"
        : components.contains(Component.COORDINATOR) ? "the coordinator API is" : "the web panel is");
  }

  private String deploymentState() {
    if (closing.get()) return "shutting down";
    return deployed.get() ? null : "starting: " + (pool == null ? "waiting for PostgreSQL" : "deploying the API");
  }

  /** The APIs this replica serves, each with what it declared (for the permission-matrix test and the docs). */
  public List<Api> apis() {
    return http.apis();
  }

  /**
   * Routes under {@code /v1} and {@code /api/v1} that no {@link Api} put there (so none of them is
   * guarded), but the public API description: must be empty.
   */
  public List<String> unguardedRoutes() {
    return http.unguardedRoutes();
  }

  public int coordinatorPort() {
    return http.coordinatorPort();
  }

  public int panelPort() {
    return http.panelPort();
  }

  /** The pool to PostgreSQL; null until the second phase has opened it (see {@link #started()}). */
  public Pool pool() {
    return pool;
  }

  /** The replica's Vert.x (tools and tests: its clustered event bus, say). */
  public Vertx vertx() {
    return vertx;
  }

  public HazelcastInstance hazelcast() {
    return hz;
  }

  // the feature modules: null until the second phase has built them

  public AuthModule auth() {
    ReplicaModules f = features;
    return f == null ? null : f.auth;
  }

  public NodeModule nodes() {
    ReplicaModules f = features;
    return f == null ? null : f.nodes;
  }

  public HeartbeatModule heartbeat() {
    ReplicaModules f = features;
    return f == null ? null : f.heartbeat;
  }

  public ChangesModule changes() {
    ReplicaModules f = features;
    return f == null ? null : f.changes;
  }

  public PolicyModule policy() {
    ReplicaModules f = features;
    return f == null ? null : f.policy;
  }

  public PanelModule panel() {
    ReplicaModules f = features;
    return f == null ? null : f.panel;
  }

  public AuditModule audit() {
    ReplicaModules f = features;
    return f == null ? null : f.audit;
  }

  public io.meshplane.meshca.MeshcaModule meshca() {
    ReplicaModules f = features;
    return f == null ? null : f.meshca;
  }

  /** The ingress routes feature (tests: its gauges' sampler). */
  public io.meshplane.ingress.IngressModule ingress() {
    ReplicaModules f = features;
    return f == null ? null : f.ingress;
  }

  public io.meshplane.bulk.BulkModule bulk() {
    ReplicaModules f = features;
    return f == null ? null : f.bulk;
  }

  public Database database() {
    return database;
  }

  public String installationId() {
    return installationId;
  }

  /** Graceful, bounded shutdown. Safe to call twice; blocking (call it from a plain thread). */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) return;
    LOG.info("shutting down: draining in-flight requests (up to {}), leaving the cluster", Durations.format(config.shutdownGrace()));
    Thread t = starter;
    if (t != null && t.isAlive()) {
      t.interrupt();
      try {
        t.join(20_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    // the modules' last work (last-use times, the write-behind's last flush) needs the pool, which
    // Vert.x closes with itself: before it, in the reverse order of their start
    List<Module> started = new ArrayList<>(modules);
    java.util.Collections.reverse(started);
    for (Module m : started) {
      try {
        Blocking.await(m.stop(), m.stopTimeout(), "stopping " + m.name());
      } catch (RuntimeException e) {
        LOG.warn("{} did not stop cleanly: {}", m.name(), e.getMessage());
      }
    }
    try {
      Blocking.await(vertx.close(), config.shutdownGrace().plusSeconds(10), "closing Vert.x");
    } catch (RuntimeException e) {
      LOG.warn("shutdown was not clean: {}", e.getMessage());
    } finally {
      Database db = database;
      if (db != null) db.close();
    }
    LOG.info("stopped");
  }

  /** Completes when the replica is ready, for callers that want to wait on readiness rather than deployment. */
  public Future<Boolean> ready() {
    return readiness.check().map(r -> "UP".equals(r.getString("status")));
  }
}
