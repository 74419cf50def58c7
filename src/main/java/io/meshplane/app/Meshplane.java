package io.meshplane.app;

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
import io.meshplane.heartbeat.Staleness;
import io.meshplane.heartbeat.StalenessMonitor;
import io.meshplane.heartbeat.WriteBehindVerticle;
import io.meshplane.http.HttpVerticle;
import io.meshplane.node.EventRoutes;
import io.meshplane.node.NodeRepository;
import io.meshplane.node.NodeRoutes;
import io.meshplane.node.NodeService;
import io.meshplane.http.Routers;
import io.meshplane.observe.HazelcastMetrics;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.ext.web.Router;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running replica: the wiring point. Starts (in this order) PostgreSQL access and migrations, the
 * clustered Vert.x with its embedded Hazelcast member, the reactive pool, then the HTTP components.
 * {@link #close()} is the graceful shutdown: stop accepting, drain in-flight requests, leave the cluster.
 */
public final class Meshplane implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Meshplane.class);
  private static final Duration START_TIMEOUT = Duration.ofMinutes(2);
  private static final Duration TOKEN_USAGE_FLUSH = Duration.ofSeconds(5);
  private static final Duration DENYLIST_RECONCILE = Duration.ofSeconds(30);
  /** The most heartbeats one event loop writes to the cluster map in one call. */
  private static final int HEARTBEAT_MAX_BATCH = 2000;

  private final MeshConfig config;
  private final Database database;
  private final Vertx vertx;
  private final Services services;
  private final AtomicInteger coordinatorPort = new AtomicInteger();
  private final AtomicInteger panelPort = new AtomicInteger();
  private final AtomicBoolean deployed = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicReference<SecuredRoutes> coordinatorApi = new AtomicReference<>();
  private final AtomicReference<Router> coordinatorRouter = new AtomicReference<>();
  /** Undeployed first at shutdown: its last flush needs the database pool, which Vert.x closes with itself. */
  private volatile String writeBehindDeployment;
  private final String installationId;

  private Meshplane(MeshConfig config, Database database, Vertx vertx, Services services, String installationId) {
    this.config = config;
    this.database = database;
    this.vertx = vertx;
    this.services = services;
    this.installationId = installationId;
  }

  /** Starts a replica and returns once it serves (or throws, having released what it had started). Blocking. */
  public static Meshplane start(MeshConfig config, Set<Component> components) {
    Database database = Database.open(config);
    Vertx vertx = null;
    try {
      database.migrate();
      String installationId = readInstallationId(database);

      Observability observability = new Observability();
      HazelcastClusterManager clusterManager = new HazelcastClusterManager(ClusterSetup.hazelcastConfig(config));
      VertxOptions options = observability.applyTo(new VertxOptions());
      if (!config.clusterHost().isEmpty()) options.getEventBusOptions().setHost(config.clusterHost());
      vertx = Blocking.await(Vertx.builder().with(options).withMetrics(observability.metricsFactory())
          .withClusterManager(clusterManager).buildClustered(), START_TIMEOUT, "joining the cluster");
      HazelcastInstance hz = clusterManager.getHazelcastInstance();
      new HazelcastMetrics(hz).bindTo(observability.registry());
      LOG.info("cluster '{}' joined as {} ({} members)", config.clusterName(),
          hz.getCluster().getLocalMember().getAddress(), hz.getCluster().getMembers().size());

      Pool pool = database.pool(vertx, config.postgresPoolSize());
      Readiness readiness = new Readiness(vertx);

      SigningKeys keys = SigningKeys.loadOrCreate(config.keysDir());
      Jwts jwts = new Jwts(vertx, keys, config);
      TokenRepository tokenRepository = new TokenRepository(pool);
      Denylist denylist = new Denylist(vertx, hz);
      int denied = loadDenylist(tokenRepository, denylist);
      LOG.info("token denylist: {} revoked or retired tokens loaded from PostgreSQL", denied);
      TokenUsage usage = new TokenUsage(pool);
      TokenVerifier verifier = new TokenVerifier(jwts, denylist, usage, observability.mesh());
      TokenIssuer issuer = new TokenIssuer(jwts, tokenRepository, keys);
      AuditLog audit = new AuditLog(pool);
      TokenService tokens = new TokenService(pool, tokenRepository, issuer, denylist, usage, audit, config.tokensMaxLifetime());

      LiveState live = new LiveState(vertx, hz);
      long[] start = live.clusterStart(System.currentTimeMillis());
      Staleness staleness = new Staleness(config.staleAfter(), start[0]);
      NodeRepository nodeRepository = new NodeRepository(pool);
      NodeService nodes = new NodeService(pool, nodeRepository, tokenRepository, issuer, denylist, audit, live, staleness,
          config.tokensMaxLifetime(), config.addressPool());

      Services services = new Services(config, vertx, hz, pool, observability, readiness, verifier, issuer, tokens, usage, audit,
          live, staleness, nodeRepository, nodes);
      Meshplane app = new Meshplane(config, database, vertx, services, installationId);
      readiness
          .registerAsync("postgres", () -> pool.query("SELECT 1").execute(), "PostgreSQL does not answer")
          .registerLocal("cluster", () -> clusterManager.isActive() && hz.getLifecycleService().isRunning()
              && hz.getCluster().getMembers().contains(hz.getCluster().getLocalMember()) ? null : "not a member of the cluster")
          .registerLocal("deployment", app::deploymentState)
          .registerLocal("writebehind", () -> observability.mesh().writeBehindBacklog.get() > config.writeBehindMaxBacklog()
              ? "write-behind backlog above writebehind.max_backlog" : null);
      String writeBehind = Blocking.await(vertx.deployVerticle(
          new WriteBehindVerticle(live, nodeRepository, observability.mesh(), config.flushInterval()),
          new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)), START_TIMEOUT, "starting the write-behind");
      app.writeBehindDeployment = writeBehind;
      Blocking.await(vertx.deployVerticle(new StalenessMonitor(hz, live, staleness, nodeRepository, observability.mesh()),
          new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)), START_TIMEOUT, "starting the staleness monitor");
      if (start[1] == 1) {
        LOG.info("this member started the cluster: nothing is declared stale before {}", Durations.format(config.staleAfter()));
        vertx.executeBlocking(() -> LiveSeed.seed(live, nodeRepository), false)
            .onSuccess(n -> LOG.info("live state seeded from PostgreSQL: {} nodes", n))
            .onFailure(t -> LOG.warn("live state not seeded from PostgreSQL: {}", t.getMessage()));
      }
      app.deploy(components);
      vertx.setPeriodic(TOKEN_USAGE_FLUSH.toMillis(), id -> usage.flush());
      vertx.setPeriodic(DENYLIST_RECONCILE.toMillis(), id -> tokens.reconcileDenylist().onSuccess(n -> {
        if (n > 0) LOG.warn("token denylist: {} revocations were missing from the cluster map and were re-applied", n);
      }));
      return app;
    } catch (RuntimeException e) {
      if (vertx != null) {
        try {
          Blocking.await(vertx.close(), Duration.ofSeconds(15), "closing Vert.x after a failed start");
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      database.close();
      throw e;
    }
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

  private static String readInstallationId(Database database) {
    try (var c = database.jdbc(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT value FROM mesh_meta WHERE key = 'installation_id'")) {
      String id = rs.next() ? rs.getString(1) : "unknown";
      LOG.info("installation {}", id);
      return id;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException("cannot read the installation id: " + e.getMessage(), e);
    }
  }

  private void deploy(Set<Component> components) {
    if (components.contains(Component.COORDINATOR)) {
      int port = deployHttp("coordinator API", config.httpPort(), coordinatorPort, this::coordinatorRoutes, instances());
      LOG.info("coordinator API listening on {}:{}", config.httpHost(), port);
    }
    if (components.contains(Component.PANEL)) {
      int port = deployHttp("web panel", config.panelPort(), panelPort, this::panelRoutes, 1);
      LOG.info("web panel listening on {}:{}", config.httpHost(), port);
    }
    deployed.set(true);
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
  private int deployHttp(String name, int port, AtomicInteger bound, Function<Vertx, Router> routes, int instances) {
    // A negative port is a shared random port; each component needs its own key, or they would share one socket.
    int requested = port == 0 ? (name.startsWith("coordinator") ? -1 : -2) : port;
    Blocking.await(vertx.deployVerticle(() -> new HttpVerticle(config.httpHost(), requested, config.shutdownGrace(), routes, bound),
        new DeploymentOptions().setInstances(instances)), START_TIMEOUT, "starting the " + name);
    return bound.get();
  }

  private Router coordinatorRoutes(Vertx v) {
    Router router = Routers.base(v, services.observability(), services.readiness());
    SecuredRoutes api = new SecuredRoutes(router, services.verifier(), services.audit());
    // The heartbeat route first: Vert.x Web tries routes in order, and every path-parameter route
    // before it would cost each heartbeat one more regex match (the fleet's traffic is heartbeats).
    HeartbeatBatcher batcher = new HeartbeatBatcher(v.getOrCreateContext(), services.live().map(), HEARTBEAT_MAX_BATCH,
        services.observability().mesh().heartbeatBatchSize);
    HeartbeatRoutes.mount(api, batcher, services.audit(), services.observability().mesh(), config.heartbeatInterval().toSeconds());
    TokenRoutes.mount(api, services.tokens(), services.verifier());
    NodeRoutes.mount(api, services.nodes());
    EventRoutes.mount(api, services.pool());
    AuditRoutes.mount(api, services.pool());
    coordinatorApi.compareAndSet(null, api);
    coordinatorRouter.compareAndSet(null, router);
    return router;
  }

  /**
   * Every route actually on the coordinator router under {@code /v1}, as "METHOD /path" (path
   * parameters as {@code {name}}); must equal {@link #declaredRoutes()}: nothing unguarded.
   */
  public List<String> mountedApiRoutes() {
    Router router = coordinatorRouter.get();
    if (router == null) return List.of();
    List<String> out = new java.util.ArrayList<>();
    for (io.vertx.ext.web.Route r : router.getRoutes()) {
      String path = r.getPath();
      if (path == null || !path.startsWith("/v1")) {
        if (r.getName() != null && r.getName().startsWith("/v1")) path = r.getName();
        else continue;
      }
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
    return Routers.base(v, services.observability(), services.readiness());
  }

  private String deploymentState() {
    if (closing.get()) return "shutting down";
    return deployed.get() ? null : "starting";
  }

  public int coordinatorPort() {
    return coordinatorPort.get();
  }

  public int panelPort() {
    return panelPort.get();
  }

  public Services services() {
    return services;
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
    try {
      Blocking.await(services.tokenUsage().flush(), Duration.ofSeconds(3), "flushing token last-use times");
    } catch (RuntimeException e) {
      LOG.warn("token last-use times not flushed: {}", e.getMessage());
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
      database.close();
    }
    LOG.info("stopped");
  }

  /** Completes when the replica is ready, for callers that want to wait on readiness rather than deployment. */
  public Future<Boolean> ready() {
    return services.readiness().check().map(r -> "UP".equals(r.getString("status")));
  }
}
