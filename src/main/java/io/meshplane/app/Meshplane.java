package io.meshplane.app;

import io.meshplane.common.Durations;

import io.meshplane.common.Blocking;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.AuditRoutes;
import io.meshplane.auth.Denylist;
import io.meshplane.auth.Jwts;
import io.meshplane.auth.SecuredRoutes;
import io.meshplane.auth.SigningKeys;
import io.meshplane.auth.TokenIssuer;
import io.meshplane.auth.TokenRecord;
import io.meshplane.auth.TokenRepository;
import io.meshplane.auth.TokenRoutes;
import io.meshplane.auth.TokenService;
import io.meshplane.auth.TokenUsage;
import io.meshplane.auth.TokenVerifier;
import io.meshplane.heartbeat.HeartbeatBatcher;
import io.meshplane.heartbeat.HeartbeatRoutes;
import io.meshplane.heartbeat.LiveSeed;
import io.meshplane.heartbeat.LiveState;
import io.meshplane.heartbeat.Quarantine;
import io.meshplane.heartbeat.Staleness;
import io.meshplane.heartbeat.StalenessMonitor;
import io.meshplane.heartbeat.WriteBehindVerticle;
import io.meshplane.common.Refusal;
import io.meshplane.http.Cursors;
import io.meshplane.http.DatabaseFailures;
import io.meshplane.http.HttpVerticle;
import io.meshplane.http.Routers;
import io.meshplane.node.EventRoutes;
import io.meshplane.node.NodeRepository;
import io.meshplane.node.NodeRoutes;
import io.meshplane.node.NodeService;
import io.meshplane.observe.HazelcastMetrics;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.micrometer.core.instrument.Gauge;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running replica: the wiring point. A replica starts in two phases, so that an orchestrator's
 * probes get answers from the first second even while PostgreSQL is away:
 *
 * <ol>
 *   <li>{@link #launch} (blocking, on the caller's thread): checks the settings that need no I/O (the
 *       database URL, the signing keys), joins the cluster, and serves both HTTP components with
 *       {@code /healthz} 200, {@code /readyz} 503 naming what is missing, {@code /metrics}, and 503
 *       {@code unavailable} on every other {@code /v1} route;
 *   <li>in the background ({@link #started()} completes after it): opens PostgreSQL, retrying with
 *       backoff while it cannot be reached (each attempt's reason is in {@code /readyz}), migrates it,
 *       builds the features, starts the write-behind and the staleness monitor, and puts the full API
 *       in place. A refusal that waiting cannot fix (wrong password or user, missing database) fails
 *       {@link #started()}, and {@code Main} stops the process with a clear message.
 * </ol>
 *
 * {@link #close()} is the graceful shutdown: stop accepting, drain in-flight requests, leave the cluster.
 */
public final class Meshplane implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Meshplane.class);
  private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
  private static final Duration TOKEN_USAGE_FLUSH = Duration.ofSeconds(5);
  private static final Duration DENYLIST_RECONCILE = Duration.ofSeconds(30);
  private static final long RETRY_MIN_MS = 1000;
  private static final long RETRY_MAX_MS = 15_000;
  /** The most heartbeats one event loop writes to the cluster map in one call. */
  private static final int HEARTBEAT_MAX_BATCH = 2000;
  /** The one /v1 route that needs no token: the API's own description. */
  public static final String OPENAPI_PATH = "/v1/openapi.yaml";

  private final MeshConfig config;
  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final HazelcastClusterManager clusterManager;
  private final Observability observability;
  private final Readiness readiness;
  private final SigningKeys keys;
  private final Buffer openApi;
  private final Set<Component> components;
  private final AtomicInteger coordinatorPort = new AtomicInteger();
  private final AtomicInteger panelPort = new AtomicInteger();
  private final List<HttpVerticle> coordinatorInstances = new ArrayList<>();
  private final AtomicBoolean deployed = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicReference<SecuredRoutes> coordinatorApi = new AtomicReference<>();
  private final AtomicReference<Router> coordinatorRouter = new AtomicReference<>();
  private final Promise<Void> started = Promise.promise();
  private final Quarantine quarantine = new Quarantine();
  /** Why the API is not served yet (shown by the postgres and deployment checks until the second phase ends). */
  private volatile String waitingFor = "connecting to PostgreSQL";
  private volatile Database database;
  private volatile Services services;
  private volatile Cursors cursors;
  private volatile String installationId;
  private volatile Thread starter;
  /** Undeployed first at shutdown: its last flush needs the database pool, which Vert.x closes with itself. */
  private volatile String writeBehindDeployment;

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
    Gauge.builder("mesh.writebehind.quarantined.rows", quarantine, Quarantine::size)
        .description("Nodes whose rows PostgreSQL refuses now, written on their own (see /readyz)").register(observability.registry());
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
    Vertx vertx = Blocking.await(Vertx.builder().with(options).withMetrics(observability.metricsFactory())
        .withClusterManager(clusterManager).buildClustered(), START_TIMEOUT, "joining the cluster");
    Meshplane app = null;
    try {
      HazelcastInstance hz = clusterManager.getHazelcastInstance();
      new HazelcastMetrics(hz).bindTo(observability.registry());
      LOG.info("cluster '{}' joined as {} ({} members)", config.clusterName(),
          hz.getCluster().getLocalMember().getAddress(), hz.getCluster().getMembers().size());
      app = new Meshplane(config, vertx, hz, clusterManager, observability, keys, openApi, components);
      app.registerChecks();
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

  private void registerChecks() {
    readiness
        .registerAsync("postgres", () -> {
          Services s = services;
          return s == null ? Future.failedFuture(waitingFor) : s.pool().query("SELECT 1").execute();
        }, t -> services == null ? t.getMessage() : "PostgreSQL does not answer")
        .registerLocal("cluster", () -> clusterManager.isActive() && hz.getLifecycleService().isRunning()
            && hz.getCluster().getMembers().contains(hz.getCluster().getLocalMember()) ? null : "not a member of the cluster")
        .registerLocal("deployment", this::deploymentState)
        .registerLocal("writebehind", () -> observability.mesh().writeBehindBacklog.get() > config.writeBehindMaxBacklog()
            ? "write-behind backlog above writebehind.max_backlog" : null, quarantine::details);
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
    String[] meta = awaitDatabase(db);
    installationId = meta[0];
    cursors = new Cursors(Base64.getUrlDecoder().decode(meta[1]));
    LOG.info("installation {}", installationId);

    Pool pool = db.pool(vertx, config.postgresPoolSize());
    Jwts jwts = new Jwts(vertx, keys, config);
    TokenRepository tokenRepository = new TokenRepository(pool);
    Denylist denylist = new Denylist(vertx, hz);
    int denied = retrying("loading the token denylist", () -> loadDenylist(tokenRepository, denylist));
    LOG.info("token denylist: {} revoked or retired tokens loaded from PostgreSQL", denied);
    TokenUsage usage = new TokenUsage(pool);
    TokenVerifier verifier = new TokenVerifier(jwts, denylist, usage, observability.mesh());
    TokenIssuer issuer = new TokenIssuer(jwts, tokenRepository, keys);
    AuditLog audit = new AuditLog(pool);
    TokenService tokens = new TokenService(pool, tokenRepository, issuer, denylist, usage, audit, config.tokensMaxLifetime());

    LiveState live = new LiveState(vertx, hz);
    // the cluster's start (and so the cold-start grace before anything is declared stale) counts from
    // the moment the first member serves heartbeats, not from a join that then waited on PostgreSQL
    long[] start = live.clusterStart(System.currentTimeMillis());
    Staleness staleness = new Staleness(config.staleAfter(), start[0]);
    NodeRepository nodeRepository = new NodeRepository(pool);
    NodeService nodes = new NodeService(pool, nodeRepository, tokenRepository, issuer, denylist, audit, live, staleness,
        config.tokensMaxLifetime(), config.addressPool());
    services = new Services(config, vertx, hz, pool, observability, readiness, verifier, issuer, tokens, usage, audit,
        live, staleness, nodeRepository, nodes);

    writeBehindDeployment = Blocking.await(vertx.deployVerticle(
        new WriteBehindVerticle(live, nodeRepository, observability.mesh(), quarantine, config.flushInterval()),
        new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)), START_TIMEOUT, "starting the write-behind");
    Blocking.await(vertx.deployVerticle(new StalenessMonitor(hz, live, staleness, nodeRepository, observability.mesh()),
        new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)), START_TIMEOUT, "starting the staleness monitor");
    if (start[1] == 1) {
      LOG.info("this member started the cluster: nothing is declared stale before {}", Durations.format(config.staleAfter()));
      vertx.executeBlocking(() -> LiveSeed.seed(live, nodeRepository), false)
          .onSuccess(n -> LOG.info("live state seeded from PostgreSQL: {} nodes", n))
          .onFailure(t -> LOG.warn("live state not seeded from PostgreSQL: {}", t.getMessage()));
    }
    if (closing.get()) throw new InterruptedException("stopping");
    List<HttpVerticle> instances;
    synchronized (coordinatorInstances) {
      instances = new ArrayList<>(coordinatorInstances);
    }
    List<Future<Void>> installed = new ArrayList<>();
    for (HttpVerticle v : instances) installed.add(v.install(this::coordinatorRoutes));
    Blocking.await(Future.all(installed), START_TIMEOUT, "installing the API routes");
    deployed.set(true);
    vertx.setPeriodic(TOKEN_USAGE_FLUSH.toMillis(), id -> usage.flush());
    vertx.setPeriodic(DENYLIST_RECONCILE.toMillis(), id -> tokens.reconcileDenylist().onSuccess(n -> {
      if (n > 0) LOG.warn("token denylist: {} revocations were missing from the cluster map and were re-applied", n);
    }));
    LOG.info("ready: the coordinator API is served");
  }

  /**
   * Migrates the database and reads the installation's facts, retrying with backoff (1 s doubling to
   * 15 s) for as long as PostgreSQL cannot be reached. Returns {installation id, cursor key}.
   */
  private String[] awaitDatabase(Database db) throws InterruptedException {
    return retrying("migrating PostgreSQL", () -> {
      db.migrate();
      return readMeta(db);
    });
  }

  private interface Attempt<T> {
    T run() throws Exception;
  }

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
        // JDBC (migrations) and the reactive client (denylist) say "unreachable" in their own ways
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

  /**
   * Revoked and retired tokens from PostgreSQL into the replicated denylist: the map does not survive a
   * restart of the whole cluster, and a member that just joined may not have received it yet.
   */
  private static int loadDenylist(TokenRepository repository, Denylist denylist) {
    List<TokenRecord> rows = Blocking.await(repository.deniedTokens(), START_TIMEOUT, "loading the token denylist");
    for (TokenRecord t : rows) {
      Denylist.Entry e = t.revokedAt() != null
          ? new Denylist.Entry(true, t.revokedAt().toEpochMilli())
          : new Denylist.Entry(false, t.retireAt().toEpochMilli());
      denylist.putNow(t.id(), e, t.expiresAt());
    }
    return rows.size();
  }

  /**
   * The installation id and the cursor key (made once per installation, by whichever replica gets
   * there first; it signs pagination cursors, see {@link Cursors}).
   */
  private static String[] readMeta(Database database) throws SQLException {
    byte[] key = new byte[32];
    new SecureRandom().nextBytes(key);
    try (Connection c = database.jdbc()) {
      try (PreparedStatement st = c.prepareStatement(
          "INSERT INTO mesh_meta (key, value) VALUES ('cursor_key', ?) ON CONFLICT (key) DO NOTHING")) {
        st.setString(1, Base64.getUrlEncoder().withoutPadding().encodeToString(key));
        st.executeUpdate();
      }
      try (PreparedStatement st = c.prepareStatement(
          "SELECT max(value) FILTER (WHERE key = 'installation_id'), max(value) FILTER (WHERE key = 'cursor_key') FROM mesh_meta");
           ResultSet rs = st.executeQuery()) {
        rs.next();
        return new String[] {rs.getString(1) == null ? "unknown" : rs.getString(1), rs.getString(2)};
      }
    }
  }

  private void deployComponents() {
    if (components.contains(Component.COORDINATOR)) {
      int port = deployHttp("coordinator API", config.httpPort(), coordinatorPort, this::startingRoutes, instances(), coordinatorInstances);
      LOG.info("coordinator API listening on {}:{}", config.httpHost(), port);
    }
    if (components.contains(Component.PANEL)) {
      int port = deployHttp("web panel", config.panelPort(), panelPort, this::panelRoutes, 1, new ArrayList<>());
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
  private int deployHttp(String name, int port, AtomicInteger bound, Function<Vertx, Router> routes, int instances,
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
  private Router startingRoutes(Vertx v) {
    Router router = Routers.base(v, observability, readiness);
    Routers.openApi(router, OPENAPI_PATH, openApi);
    router.route("/v1/*").handler(ctx -> {
      ctx.response().putHeader("Retry-After", "5");
      ctx.fail(Refusal.unavailable("this replica is starting (" + (services == null ? "waiting for PostgreSQL" : "almost ready")
          + "); retry"));
    });
    return router;
  }

  private Router coordinatorRoutes(Vertx v) {
    Router router = Routers.base(v, observability, readiness);
    Routers.openApi(router, OPENAPI_PATH, openApi);
    SecuredRoutes api = new SecuredRoutes(router, services.verifier(), services.audit());
    // The heartbeat route first: Vert.x Web tries routes in order, and every path-parameter route
    // before it would cost each heartbeat one more regex match (the fleet's traffic is heartbeats).
    HeartbeatBatcher batcher = new HeartbeatBatcher(v.getOrCreateContext(), services.live().map(), HEARTBEAT_MAX_BATCH,
        observability.mesh().heartbeatBatchSize);
    HeartbeatRoutes.mount(api, batcher, services.audit(), observability.mesh(), config.heartbeatInterval().toSeconds());
    TokenRoutes.mount(api, services.tokens(), services.verifier(), cursors);
    NodeRoutes.mount(api, services.nodes(), cursors);
    EventRoutes.mount(api, services.pool(), cursors);
    AuditRoutes.mount(api, services.pool(), cursors);
    coordinatorApi.compareAndSet(null, api);
    coordinatorRouter.compareAndSet(null, router);
    return router;
  }

  /**
   * Every route actually on the coordinator router under {@code /v1}, as "METHOD /path" (path
   * parameters as {@code {name}}), except the public {@link #OPENAPI_PATH}; must equal
   * {@link #declaredRoutes()}: nothing unguarded.
   */
  public List<String> mountedApiRoutes() {
    Router router = coordinatorRouter.get();
    if (router == null) return List.of();
    List<String> out = new ArrayList<>();
    for (io.vertx.ext.web.Route r : router.getRoutes()) {
      String path = r.getPath();
      if (path == null || !path.startsWith("/v1")) {
        if (r.getName() != null && r.getName().startsWith("/v1")) path = r.getName();
        else continue;
      }
      if (path.equals(OPENAPI_PATH)) continue;
      String contract = path.replaceAll(":([a-z_]+)", "{$1}");
      if (r.methods() == null || r.methods().isEmpty()) out.add("* " + contract);
      else for (io.vertx.core.http.HttpMethod m : r.methods()) out.add(m.name() + " " + contract);
    }
    return out;
  }

  /** The routes of the coordinator API as declared (method, path, permission), for tests and docs. */
  public List<SecuredRoutes.Declared> declaredRoutes() {
    return coordinatorApi.get() == null ? List.of() : coordinatorApi.get().declared();
  }

  private Router panelRoutes(Vertx v) {
    return Routers.base(v, observability, readiness);
  }

  private String deploymentState() {
    if (closing.get()) return "shutting down";
    return deployed.get() ? null : "starting: " + (services == null ? "waiting for PostgreSQL" : "deploying the API");
  }

  public int coordinatorPort() {
    return coordinatorPort.get();
  }

  public int panelPort() {
    return panelPort.get();
  }

  /** The features; null until the second phase has built them (see {@link #started()}). */
  public Services services() {
    return services;
  }

  public Database database() {
    return database;
  }

  public String installationId() {
    return installationId;
  }

  public Quarantine quarantine() {
    return quarantine;
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
    Services s = services;
    if (s != null) {
      try {
        Blocking.await(s.tokenUsage().flush(), Duration.ofSeconds(3), "flushing token last-use times");
      } catch (RuntimeException e) {
        LOG.warn("token last-use times not flushed: {}", e.getMessage());
      }
    }
    try {
      if (writeBehindDeployment != null) {
        Blocking.await(vertx.undeploy(writeBehindDeployment), Duration.ofSeconds(15), "the last write-behind flush");
      }
    } catch (RuntimeException e) {
      LOG.warn("the last write-behind flush did not finish: {}", e.getMessage());
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
