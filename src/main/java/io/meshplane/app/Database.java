package io.meshplane.app;

import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL this replica uses: either a server named by a {@code postgresql://} URL, or (the
 * single-machine mode) a real PostgreSQL started by this process with its data under
 * {@code postgres.embedded_dir}. Owns the migrations; hands out the reactive pool.
 */
public final class Database implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Database.class);

  private final PgConnectOptions connectOptions;
  private final String jdbcUrl;
  private final EmbeddedPostgres embedded;

  private Database(PgConnectOptions connectOptions, String jdbcUrl, EmbeddedPostgres embedded) {
    this.connectOptions = connectOptions;
    this.jdbcUrl = jdbcUrl;
    this.embedded = embedded;
  }

  /** Resolves the configured database; starts the embedded one when {@code postgres.url} is {@code embedded}. Blocking. */
  public static Database open(MeshConfig config) {
    return open(config, false);
  }

  /**
   * @param attach for command-line tools: when the embedded PostgreSQL is already running (a service owns
   *     it), connect to it instead of refusing
   */
  public static Database open(MeshConfig config, boolean attach) {
    if (!config.embeddedPostgres()) {
      PgConnectOptions opts;
      try {
        opts = PgConnectOptions.fromUri(config.postgresUrl().replaceFirst("^postgres://", "postgresql://"));
      } catch (RuntimeException e) {
        throw new ConfigException("postgres.url (env MESH_PG_URL): not a valid postgresql:// URL");
      }
      String query = URI.create(config.postgresUrl()).getRawQuery();
      String jdbc = "jdbc:postgresql://" + opts.getHost() + ":" + opts.getPort() + "/" + opts.getDatabase()
          + (query == null ? "" : "?" + query);
      return new Database(tune(opts), jdbc, null);
    }
    Integer runningPort = runningEmbeddedPort(config.postgresEmbeddedDir());
    if (runningPort != null) {
      if (!attach) {
        throw new IllegalStateException("the embedded PostgreSQL in " + config.postgresEmbeddedDir()
            + " is already running (another meshplane process owns it); stop that process first");
      }
      LOG.info("attaching to the running embedded PostgreSQL on 127.0.0.1:{}", runningPort);
      PgConnectOptions opts = new PgConnectOptions()
          .setHost("127.0.0.1").setPort(runningPort).setDatabase("postgres").setUser("postgres");
      return new Database(tune(opts), "jdbc:postgresql://127.0.0.1:" + runningPort + "/postgres", null);
    }
    try {
      Files.createDirectories(config.postgresEmbeddedDir());
      LOG.info("postgres.url is 'embedded': starting a PostgreSQL inside this process, data in {} "
          + "(single-machine mode; use a postgresql:// URL for several replicas)", config.postgresEmbeddedDir().toAbsolutePath());
      EmbeddedPostgres pg = EmbeddedPostgres.builder()
          .setDataDirectory(config.postgresEmbeddedDir())
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setPGStartupWait(Duration.ofSeconds(60))
          .setServerConfig("listen_addresses", "127.0.0.1")
          .start();
      PgConnectOptions opts = new PgConnectOptions()
          .setHost("127.0.0.1").setPort(pg.getPort()).setDatabase("postgres").setUser("postgres");
      LOG.info("embedded PostgreSQL listening on 127.0.0.1:{}", pg.getPort());
      return new Database(tune(opts), "jdbc:postgresql://127.0.0.1:" + pg.getPort() + "/postgres", pg);
    } catch (IOException e) {
      throw new IllegalStateException("the embedded PostgreSQL did not start: " + e.getMessage(), e);
    }
  }

  /** The port of a live PostgreSQL owning {@code dir} (from its postmaster.pid), or null. */
  private static Integer runningEmbeddedPort(java.nio.file.Path dir) {
    java.nio.file.Path pidFile = dir.resolve("postmaster.pid");
    try {
      if (!Files.exists(pidFile)) return null;
      java.util.List<String> lines = Files.readAllLines(pidFile);
      if (lines.size() < 4) return null;
      long pid = Long.parseLong(lines.get(0).trim());
      if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) return Integer.parseInt(lines.get(3).trim());
      return null;
    } catch (IOException | NumberFormatException e) {
      return null;
    }
  }

  private static PgConnectOptions tune(PgConnectOptions opts) {
    return opts.setPipeliningLimit(256).setCachePreparedStatements(true);
  }

  /** Applies the Flyway migrations in {@code db/migration}. Blocking; safe when replicas start together (Flyway locks). */
  public MigrateResult migrate() {
    MigrateResult result = Flyway.configure()
        .dataSource(jdbcUrl, connectOptions.getUser(), connectOptions.getPassword())
        .locations("classpath:db/migration")
        .connectRetries(10)
        .load()
        .migrate();
    LOG.info("database schema at version {} ({} migrations applied now)",
        result.targetSchemaVersion == null ? "current" : result.targetSchemaVersion, result.migrationsExecuted);
    return result;
  }

  /** A plain JDBC connection, for the command line tools only (the service uses the reactive pool). */
  public Connection jdbc() throws SQLException {
    return DriverManager.getConnection(jdbcUrl, connectOptions.getUser(), connectOptions.getPassword());
  }

  public Pool pool(Vertx vertx, int size) {
    PoolOptions poolOptions = new PoolOptions()
        .setMaxSize(size)
        .setMaxWaitQueueSize(10_000)
        .setConnectionTimeout(5)
        .setIdleTimeout(60);
    // A dead database must fail requests fast (503), not hang them.
    NetClientOptions net = new NetClientOptions().setConnectTimeout(3000).setTcpKeepAlive(true);
    return PgBuilder.pool().with(poolOptions).with(net).connectingTo(connectOptions).using(vertx).build();
  }

  public PgConnectOptions connectOptions() {
    return connectOptions;
  }

  public String jdbcUrl() {
    return jdbcUrl;
  }

  public boolean embedded() {
    return embedded != null;
  }

  @Override
  public void close() {
    if (embedded != null) {
      try {
        embedded.close();
        LOG.info("embedded PostgreSQL stopped");
      } catch (IOException e) {
        LOG.warn("embedded PostgreSQL did not stop cleanly: {}", e.getMessage());
      }
    }
  }
}
