package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.AuditModule;
import io.meshplane.auth.AuthModule;
import io.meshplane.auth.SigningKeys;
import io.meshplane.common.Blocking;
import io.meshplane.common.Durations;
import io.meshplane.heartbeat.HeartbeatModule;
import io.meshplane.http.Api;
import io.meshplane.http.ClientAddresses;
import io.meshplane.http.Cursors;
import io.meshplane.http.Dashboard;
import io.meshplane.http.DatabaseFailures;
import io.meshplane.http.HttpVerticle;
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
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
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
 */
public final class Meshplane implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Meshplane.class);
  private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
  private static final long RETRY_MIN_MS = 1000;
  private static final long RETRY_MAX_MS = 15_000;
  /** The one /v1 route that needs no token: the API's own description. */
  public static final String OPENAPI_PATH = "/v1/openapi.yaml";
  /** The machines' API: node agents, automation, CI pipelines, with bearer tokens. */
  public static final String COORDINATOR_PREFIX = "/v1";
  /** The people's API: the web panel's, with session cookies; the dashboard is served beside it at {@code /}. */
  public static final String PANEL_PREFIX = "/api/v1";

  private final MeshConfig config;
  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final HazelcastClusterManager clusterManager;
  private final Observability observability;
  private final Readiness readiness;
  private final SigningKeys keys;
  private final Buffer openApi;
  private final Set<Component> components;
  /** Whose X-Forwarded-For is believed ({@code http.trusted_proxies}). */
  private final ClientAddresses clients;
  private final AtomicInteger coordinatorPort = new AtomicInteger();
  private final AtomicInteger panelPort = new AtomicInteger();
  private final List<HttpVerticle> coordinatorInstances = new ArrayList<>();
  private final List<HttpVerticle> panelInstances = new ArrayList<>();
  private final AtomicBoolean deployed = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  /** The coordinator API of one HTTP instance, kept for the tests that check every route is guarded. */
  private final AtomicReference<Routers.Mounted> coordinatorApi = new AtomicReference<>();
  private final AtomicReference<Routers.Mounted> panelApi = new AtomicReference<>();
  private final Promise<Void> started = Promise.promise();
  /** Why the API is not served yet (shown by the postgres and deployment checks until the second phase ends). */
  private volatile String waitingFor = "connecting to PostgreSQL";
  private volatile Database database;
  private volatile Pool pool;
  private volatile String installationId;
  private volatile Thread starter;
  private volatile AuditModule audit;
  private volatile AuthModule auth;
  private volatile NodeModule nodes;
  private volatile HeartbeatModule heartbeat;
  private volatile ChangesModule changes;
  private volatile PolicyModule policy;
  private volatile OpsModule ops;
  private volatile PanelModule panel;
  /** In the order they start and mount routes (the heartbeat's route first); stopped in reverse. */
  private volatile List<Module> modules = List.of();

  private Meshplane(MeshConfig config, Vertx vertx, HazelcastInstance hz, HazelcastClusterManager clusterManager,
      Observability observability, SigningKeys keys, Buffer openApi, Set<Component> components) {
    this.config = config;
    this.vertx = vertx;
    this.hz = hz;
    this.clusterManager = clusterManager;
    this.observability = observability;
    this.readiness = new Readiness(vertx);
    this.keys = keys;
    this.openApi = openApi;
    this.components = components;
    this.clients = ClientAddresses.of(config.trustedProxies());
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
      app = new Meshplane(config, vertx, hz, clusterManager, observability, keys, openApi, components);
      Meshplane self = app;
      ReplicaChecks.register(app.readiness, () -> self.pool, () -> self.waitingFor, clusterManager, hz, app::deploymentState);
      app.deployComponents();
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
    Database.Meta meta = retrying("migrating PostgreSQL", () -> {
      db.migrate();
      return db.meta();
    });
    installationId = meta.installationId();
    LOG.info("installation {}", installationId);
    Cursors cursors = new Cursors(meta.cursorKey());
    Pool p = db.pool(vertx, config.postgresPoolSize());
    // lists and counts whose cost grows with the data: connections of their own, each statement under postgres.read_timeout
    Pool reads = db.readPool(vertx, config.postgresReadPoolSize(), config.postgresReadTimeout());

    // the features, each with the slice of the replica it needs; they meet through the change log
    // (appended, announced, followed) and narrow interfaces, never through each other's insides
    changes = new ChangesModule(vertx, p, observability.mesh().registry());
    audit = new AuditModule(p, reads, cursors);
    auth = new AuthModule(vertx, hz, p, reads, keys, audit.log(), observability.mesh(), cursors,
        new AuthModule.Settings(config.issuer(), config.tokensMaxLifetime()));
    // policy records its drift events in the heartbeat feature's journal (built after it): asked at call time
    policy = new PolicyModule(vertx, hz, p, changes, (eventId, nodeId) -> heartbeat.drift(eventId, nodeId), audit.log(),
        observability.mesh(), cursors, config.policyWork());
    // operations answer with the node record, which the node feature (built last) reads: asked at call time
    ops = new OpsModule(vertx, p, audit.log(), changes, (caller, id) -> nodes.service().get(caller, id), config.relays(),
        observability.mesh(), cursors, config.operationsDeadline());
    heartbeat = new HeartbeatModule(vertx, hz, p, reads, changes, policy, ops, observability.mesh(), cursors, new HeartbeatModule.Settings(
        config.heartbeatInterval(), config.staleAfter(), config.flushInterval(), config.writeBehindMaxBacklog(), config.pendingTtl()));
    nodes = new NodeModule(p, reads, auth.agentCredentials(), audit.log(), heartbeat.liveNodes(), changes, policy, config.relays(), cursors,
        config.addressPool());
    // the panel reads the overview's numbers from the features through these functions, knowing none of them
    long intervalSeconds = Math.max(1, config.heartbeatInterval().toSeconds());
    panel = new PanelModule(vertx, hz, p, audit.log(), observability.mesh(), cursors, config.panel(), new PanelModule.Sources(
        caller -> nodes.service().counts(caller), ops::inFlight, policy::drifting, intervalSeconds));
    // the change log loads its followers (the peer model, the operations board) and starts first, then
    // policy and operations, before the heartbeat route is served: answers come from the model and the board
    List<Module> all = List.of(changes, policy, ops, heartbeat, auth, nodes, audit, panel);
    for (Module m : all) m.checks(readiness);
    pool = p;
    for (Module m : all) {
      retrying("loading " + m.name(), () -> {
        m.load();
        return null;
      });
    }
    modules = all;
    for (Module m : all) Blocking.await(m.start(), START_TIMEOUT, "starting " + m.name());
    if (closing.get()) throw new InterruptedException("stopping");

    List<Future<Void>> installed = new ArrayList<>();
    for (HttpVerticle v : coordinatorInstancesCopy()) installed.add(v.install(this::coordinatorRoutes));
    for (HttpVerticle v : panelInstancesCopy()) installed.add(v.install(this::panelRoutes));
    Blocking.await(Future.all(installed), START_TIMEOUT, "installing the API routes");
    deployed.set(true);
    LOG.info("ready: {} served", components.size() == 2 ? "the coordinator API and the web panel are"
        : components.contains(Component.COORDINATOR) ? "the coordinator API is" : "the web panel is");
  }

  private interface Attempt<T> {
    T run() throws Exception;
  }

  /**
   * Runs {@code attempt}, retrying with backoff (1 s doubling to 15 s) for as long as PostgreSQL cannot
   * be reached; a refusal of the credentials stops the start with a {@link ConfigException}, any other
   * failure with its cause.
   */
  private <T> T retrying(String what, Attempt<T> attempt) throws InterruptedException {
    long wait = RETRY_MIN_MS;
    for (int n = 1; ; n++) {
      if (closing.get()) throw new InterruptedException("stopping");
      try {
        T result = attempt.run();
        waitingFor = "starting";
        return result;
      } catch (Exception e) {
        if (Database.isFatal(e)) {
          throw new ConfigException("PostgreSQL refused this replica (" + rootMessage(e)
              + "); check postgres.url (env MESH_PG_URL): user, password and database name");
        }
        // JDBC (migrations) and the reactive client (the modules' loads) say "unreachable" in their own ways
        if (!Database.isUnreachable(e) && !DatabaseFailures.isUnavailable(e)) {
          throw new IllegalStateException(what + " failed: " + rootMessage(e), e);
        }
        waitingFor = "not reachable yet (" + what + ", attempt " + n + "): " + rootMessage(e);
        LOG.warn("PostgreSQL: {}; retrying in {} ms", waitingFor, wait);
        Thread.sleep(wait);
        wait = Math.min(RETRY_MAX_MS, wait * 2);
      }
    }
  }

  /** The first sentence of the innermost cause: what the driver said, without a stack trace. */
  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) c = c.getCause();
    String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    int dot = m.indexOf(". ");
    return (dot > 0 ? m.substring(0, dot) : m).replace('\n', ' ');
  }

  private void deployComponents() {
    if (components.contains(Component.COORDINATOR)) {
      int port = deployHttp("coordinator API", config.httpPort(), coordinatorPort, this::startingRoutes, instances(), coordinatorInstances);
      LOG.info("coordinator API listening on {}:{}", config.httpHost(), port);
    }
    if (components.contains(Component.PANEL)) {
      int port = deployHttp("web panel", config.panelPort(), panelPort, this::panelStartingRoutes, 1, panelInstances);
      LOG.info("web panel listening on {}:{}", config.httpHost(), port);
    }
  }

  /**
   * One coordinator verticle per CPU core by default, not one per event loop (Vert.x makes 2 per
   * core): the other loops stay free for the PostgreSQL client and timers, and on 2 cores the
   * heartbeat benchmark ran faster with 2 instances than with 4 (fewer threads competing for them).
   */
  private int instances() {
    return config.httpInstances() > 0 ? config.httpInstances() : Runtime.getRuntime().availableProcessors();
  }

  /**
   * Deploys {@code instances} verticles sharing one port. Port 0 means "any free port" for the whole
   * component: Vert.x shares a random port among instances when asked for a negative port, so every
   * instance ends up on the same one.
   */
  private int deployHttp(String name, int port, AtomicInteger bound, Function<Vertx, Handler<HttpServerRequest>> routes, int instances,
      List<HttpVerticle> deployedInstances) {
    // A negative port is a shared random port; each component needs its own key, or they would share one socket.
    int requested = port == 0 ? (name.startsWith("coordinator") ? -1 : -2) : port;
    Blocking.await(vertx.deployVerticle(() -> {
      HttpVerticle v = new HttpVerticle(config.httpHost(), requested, config.shutdownGrace(), routes, bound);
      synchronized (deployedInstances) {
        deployedInstances.add(v);
      }
      return v;
    }, new DeploymentOptions().setInstances(instances)), START_TIMEOUT, "starting the " + name);
    return bound.get();
  }

  /** What the coordinator serves until PostgreSQL has answered: probes, metrics, the API's description, 503 for the rest. */
  private Handler<HttpServerRequest> startingRoutes(Vertx v) {
    return Routers.starting(v, observability, readiness, clients, openApi, COORDINATOR_PREFIX,
        () -> pool == null ? "waiting for PostgreSQL" : "almost ready");
  }

  /** The full coordinator API on one HTTP instance: every module's routes, with bearer tokens as the way in. */
  private Handler<HttpServerRequest> coordinatorRoutes(Vertx v) {
    Routers.Mounted mounted = Routers.api(v, observability, readiness, clients, openApi, "coordinator", COORDINATOR_PREFIX, true,
        auth.authenticator(), audit.log(), api -> {
          for (Module m : modules) m.routes(api);
        });
    coordinatorApi.compareAndSet(null, mounted);
    return mounted.handler();
  }

  /** What the panel serves until PostgreSQL has answered: the dashboard's files, probes, metrics, 503 under /api/v1. */
  private Handler<HttpServerRequest> panelStartingRoutes(Vertx v) {
    return Dashboard.starting(v, observability, readiness, clients, PANEL_PREFIX,
        () -> pool == null ? "waiting for PostgreSQL" : "almost ready");
  }

  /**
   * The full panel API on its HTTP instance: the same routes of every module as the coordinator's
   * (but the machines' own), with the panel's sessions as the way in, and the dashboard.
   */
  private Handler<HttpServerRequest> panelRoutes(Vertx v) {
    Routers.Mounted mounted = Dashboard.mount(Routers.api(v, observability, readiness, clients, null, "panel", PANEL_PREFIX, false,
        panel.authenticator(), audit.log(), api -> {
          for (Module m : modules) m.routes(api);
        }), PANEL_PREFIX);
    panelApi.compareAndSet(null, mounted);
    return mounted.handler();
  }

  private List<HttpVerticle> coordinatorInstancesCopy() {
    synchronized (coordinatorInstances) {
      return new ArrayList<>(coordinatorInstances);
    }
  }

  private List<HttpVerticle> panelInstancesCopy() {
    synchronized (panelInstances) {
      return new ArrayList<>(panelInstances);
    }
  }

  /** The APIs this replica serves, each with what it declared (for the permission-matrix test and the docs). */
  public List<Api> apis() {
    List<Api> out = new ArrayList<>();
    for (Routers.Mounted m : new Routers.Mounted[] {coordinatorApi.get(), panelApi.get()}) {
      if (m != null) out.add(m.api());
    }
    return out;
  }

  /**
   * Routes under {@code /v1} and {@code /api/v1} that no {@link Api} put there (so none of them is
   * guarded), but the public API description: must be empty.
   */
  public List<String> unguardedRoutes() {
    List<String> out = new ArrayList<>();
    for (Routers.Mounted m : new Routers.Mounted[] {coordinatorApi.get(), panelApi.get()}) {
      if (m != null) out.addAll(m.unguarded().get());
    }
    return out;
  }

  private String deploymentState() {
    if (closing.get()) return "shutting down";
    return deployed.get() ? null : "starting: " + (pool == null ? "waiting for PostgreSQL" : "deploying the API");
  }

  public int coordinatorPort() {
    return coordinatorPort.get();
  }

  public int panelPort() {
    return panelPort.get();
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

  public AuthModule auth() {
    return auth;
  }

  public NodeModule nodes() {
    return nodes;
  }

  public HeartbeatModule heartbeat() {
    return heartbeat;
  }

  public ChangesModule changes() {
    return changes;
  }

  public PolicyModule policy() {
    return policy;
  }

  public PanelModule panel() {
    return panel;
  }

  public AuditModule audit() {
    return audit;
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
