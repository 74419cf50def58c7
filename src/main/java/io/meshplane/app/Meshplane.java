package io.meshplane.app;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.http.HttpVerticle;
import io.meshplane.http.Routers;
import io.meshplane.observe.HazelcastMetrics;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.ext.web.Router;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;
import io.vertx.sqlclient.Pool;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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

  private final MeshConfig config;
  private final Database database;
  private final Vertx vertx;
  private final Services services;
  private final AtomicInteger coordinatorPort = new AtomicInteger();
  private final AtomicInteger panelPort = new AtomicInteger();
  private final AtomicBoolean deployed = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
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
      Services services = new Services(config, vertx, hz, pool, observability, readiness);
      Meshplane app = new Meshplane(config, database, vertx, services, installationId);
      readiness
          .registerAsync("postgres", () -> pool.query("SELECT 1").execute(), "PostgreSQL does not answer")
          .registerLocal("cluster", () -> clusterManager.isActive() && hz.getLifecycleService().isRunning()
              && hz.getCluster().getMembers().contains(hz.getCluster().getLocalMember()) ? null : "not a member of the cluster")
          .registerLocal("deployment", app::deploymentState);
      app.deploy(components);
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

  private int instances() {
    return config.httpInstances() > 0 ? config.httpInstances() : VertxOptions.DEFAULT_EVENT_LOOP_POOL_SIZE;
  }

  /**
   * Deploys {@code instances} verticles sharing one port. Port 0 means "any free port" for the whole
   * component: Vert.x shares a random port among instances when asked for a negative port, so every
   * instance ends up on the same one.
   */
  private int deployHttp(String name, int port, AtomicInteger bound, Function<Vertx, Router> routes, int instances) {
    int requested = port == 0 ? -1 : port;
    Blocking.await(vertx.deployVerticle(() -> new HttpVerticle(config.httpHost(), requested, config.shutdownGrace(), routes, bound),
        new DeploymentOptions().setInstances(instances)), START_TIMEOUT, "starting the " + name);
    return bound.get();
  }

  private Router coordinatorRoutes(Vertx v) {
    return Routers.base(v, services.observability(), services.readiness());
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
