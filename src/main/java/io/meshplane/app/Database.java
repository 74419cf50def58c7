package io.meshplane.app;

import io.meshplane.common.MigrationChecksums;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL this replica uses: either a server named by a {@code postgresql://} URL, or (the
 * single-machine mode) a real PostgreSQL started by this process with its data under
 * {@code postgres.embedded_dir}. Owns the migrations; hands out the reactive pool.
 *
 * <p>The embedded server is not open to every local account: it is initialised with password
 * authentication ({@code scram-sha-256}) for its superuser, and the password is a generated secret kept
 * in {@code <embedded_dir>.secret} (mode 0600) beside the data folder. The command-line tools read the
 * same file to attach. A data folder made by an older version (trust authentication) is converted at
 * its next start.
 */
public final class Database implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Database.class);
  /** SQLSTATEs that no amount of waiting fixes: wrong password or user, missing database, no privilege. */
  private static final Set<String> FATAL_STATES = Set.of("28P01", "28000", "3D000", "42501");
  private static final Pattern TRUST = Pattern.compile("(?m)^(\\s*(?:local|host|hostssl|hostnossl)\\s.*?)\\btrust\\s*$");

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
   * Checks {@code postgres.url} without connecting: a URL that cannot be parsed stops the start at once
   * (a {@link ConfigException}), before anything else starts.
   */
  public static void checkUrl(MeshConfig config) {
    if (!config.embeddedPostgres()) external(config);
  }

  /**
   * @param attach for command-line tools: when the embedded PostgreSQL is already running (a service owns
   *     it), connect to it with its secret instead of refusing
   */
  public static Database open(MeshConfig config, boolean attach) {
    if (!config.embeddedPostgres()) return external(config);
    Path dir = config.postgresEmbeddedDir();
    Path secretFile = secretFile(dir);
    Integer runningPort = runningEmbeddedPort(dir);
    if (runningPort != null) {
      if (!attach) {
        throw new IllegalStateException("the embedded PostgreSQL in " + dir
            + " is already running (another meshplane process owns it); stop that process first");
      }
      String secret = readSecret(secretFile);
      if (secret == null) throw new IllegalStateException("cannot attach to the embedded PostgreSQL: " + secretFile + " is missing");
      LOG.info("attaching to the running embedded PostgreSQL on 127.0.0.1:{}", runningPort);
      return local(runningPort, secret, null);
    }
    try {
      Files.createDirectories(dir);
      LOG.info("postgres.url is 'embedded': starting a PostgreSQL inside this process, data in {} "
          + "(single-machine mode; use a postgresql:// URL for several replicas)", dir.toAbsolutePath());
      boolean fresh = !Files.exists(dir.resolve("postgresql.conf"));
      boolean convert = !fresh && TRUST.matcher(Files.readString(dir.resolve("pg_hba.conf"))).find();
      String secret = fresh ? null : readSecret(secretFile);
      if (secret == null) {
        if (!fresh && !convert) {
          throw new IllegalStateException("the embedded PostgreSQL in " + dir + " requires a password, but " + secretFile
              + " (which holds it) is missing");
        }
        secret = newSecret(secretFile);
      }
      EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
          .setDataDirectory(dir)
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(false)
          .setPGStartupWait(Duration.ofSeconds(60))
          .setServerConfig("listen_addresses", "127.0.0.1")
          .setServerConfig("password_encryption", "scram-sha-256")
          .setConnectConfig("password", secret);
      if (fresh) {
        // initdb: password authentication from the first start, the superuser's password from the secret file
        builder.setLocaleConfig("auth", "scram-sha-256").setLocaleConfig("pwfile", secretFile.toAbsolutePath().toString());
      }
      EmbeddedPostgres pg = builder.start();
      Database db = local(pg.getPort(), secret, pg);
      if (convert) db.requirePassword(dir, secret);
      LOG.info("embedded PostgreSQL listening on 127.0.0.1:{} (password authentication; secret in {})", pg.getPort(), secretFile);
      return db;
    } catch (IOException | SQLException e) {
      throw new IllegalStateException("the embedded PostgreSQL did not start: " + e.getMessage(), e);
    }
  }

  private static Database external(MeshConfig config) {
    PgConnectOptions opts;
    try {
      opts = PgConnectOptions.fromUri(config.postgresUrl().replaceFirst("^postgres://", "postgresql://"));
    } catch (RuntimeException e) {
      throw new ConfigException("postgres.url (env MESH_PG_URL): not a valid postgresql:// URL");
    }
    String query;
    try {
      query = URI.create(config.postgresUrl()).getRawQuery();
    } catch (IllegalArgumentException e) {
      throw new ConfigException("postgres.url (env MESH_PG_URL): not a valid postgresql:// URL");
    }
    String jdbc = "jdbc:postgresql://" + opts.getHost() + ":" + opts.getPort() + "/" + opts.getDatabase()
        + (query == null ? "" : "?" + query);
    return new Database(tune(opts), jdbc, null);
  }

  private static Database local(int port, String secret, EmbeddedPostgres pg) {
    PgConnectOptions opts = new PgConnectOptions()
        .setHost("127.0.0.1").setPort(port).setDatabase("postgres").setUser("postgres").setPassword(secret);
    return new Database(tune(opts), "jdbc:postgresql://127.0.0.1:" + port + "/postgres", pg);
  }

  /** {@code data/postgres} keeps its secret in {@code data/postgres.secret}: beside the data, not in it. */
  public static Path secretFile(Path embeddedDir) {
    Path abs = embeddedDir.toAbsolutePath().normalize();
    return abs.resolveSibling(abs.getFileName() + ".secret");
  }

  private static String readSecret(Path file) throws IllegalStateException {
    try {
      return Files.exists(file) ? Files.readString(file, StandardCharsets.US_ASCII).trim() : null;
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  /** A new random secret (256 bits) in a file only this account can read. */
  private static String newSecret(Path file) throws IOException {
    byte[] raw = new byte[32];
    new SecureRandom().nextBytes(raw);
    String secret = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    Files.deleteIfExists(file);
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (UnsupportedOperationException e) {
      Files.createFile(file);
    }
    Files.writeString(file, secret + "\n", StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
    return secret;
  }

  /**
   * A data folder initialised by an older version trusts every local connection: give the superuser
   * the new secret as its password, then switch every {@code trust} line of pg_hba.conf to
   * {@code scram-sha-256} and reload.
   */
  private void requirePassword(Path dir, String secret) throws IOException, SQLException {
    try (Connection c = jdbc(); Statement st = c.createStatement()) {
      st.execute("SET password_encryption = 'scram-sha-256'");
      st.execute("ALTER ROLE postgres PASSWORD '" + secret + "'");
      Path hba = dir.resolve("pg_hba.conf");
      Files.writeString(hba, TRUST.matcher(Files.readString(hba)).replaceAll("$1scram-sha-256"));
      st.execute("SELECT pg_reload_conf()");
    }
    LOG.warn("the embedded PostgreSQL in {} trusted every local connection; it now requires the password in {}", dir,
        secretFile(dir));
  }

  /** The port of a live PostgreSQL owning {@code dir} (from its postmaster.pid), or null. */
  private static Integer runningEmbeddedPort(Path dir) {
    Path pidFile = dir.resolve("postmaster.pid");
    try {
      if (!Files.exists(pidFile)) return null;
      List<String> lines = Files.readAllLines(pidFile);
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

  /**
   * Applies the Flyway migrations in {@code db/migration}. Blocking; safe when replicas start together
   * (Flyway locks). First records the new checksums of migrations whose comments were reworded after
   * they shipped ({@link MigrationChecksums}), so a database migrated with their old text validates.
   */
  public MigrateResult migrate() {
    int realigned;
    try (Connection c = jdbc()) {
      realigned = MigrationChecksums.realign(c, "flyway_schema_history");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the schema history: " + e.getMessage(), e);
    }
    if (realigned > 0) {
      LOG.info("schema history: {} checksums realigned to migrations whose comments were reworded (the SQL is unchanged)", realigned);
    }
    MigrateResult result = Flyway.configure()
        .dataSource(jdbcUrl, connectOptions.getUser(), connectOptions.getPassword())
        .locations("classpath:db/migration")
        .load()
        .migrate();
    LOG.info("database schema at version {} ({} migrations applied now)",
        result.targetSchemaVersion == null ? "current" : result.targetSchemaVersion, result.migrationsExecuted);
    return result;
  }

  /**
   * True when a failure to reach the database is one that waiting will not fix: the server answered
   * and refused the credentials, the database does not exist, or the user lacks a privilege.
   */
  public static boolean isFatal(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof SQLException sql && sql.getSQLState() != null && FATAL_STATES.contains(sql.getSQLState())) return true;
    }
    return false;
  }

  /**
   * True when the database could not be reached (yet): the connection was refused, timed out or
   * broke, the host name does not resolve (yet), or the server is starting, shutting down or out of
   * connections. Worth retrying; anything else (a migration that fails, a checksum that does not
   * match) is not.
   */
  public static boolean isUnreachable(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof SQLException sql && sql.getSQLState() != null) {
        String state = sql.getSQLState();
        if (state.startsWith("08") || state.startsWith("57P") || state.startsWith("53")) return true;
      }
      if (c instanceof java.net.ConnectException || c instanceof java.net.UnknownHostException
          || c instanceof java.net.SocketTimeoutException || c instanceof java.net.NoRouteToHostException
          || c instanceof java.io.EOFException) {
        return true;
      }
    }
    return false;
  }

  /** The installation's facts, made once per installation and shared by every replica (see {@link #meta()}). */
  public record Meta(String installationId, byte[] cursorKey) {}

  /**
   * The installation id and the cursor key. The key is made by whichever replica gets here first
   * (256 random bits); it signs pagination cursors. Blocking.
   */
  public Meta meta() throws SQLException {
    byte[] key = new byte[32];
    new SecureRandom().nextBytes(key);
    try (Connection c = jdbc()) {
      try (java.sql.PreparedStatement st = c.prepareStatement(
          "INSERT INTO mesh_meta (key, value) VALUES ('cursor_key', ?) ON CONFLICT (key) DO NOTHING")) {
        st.setString(1, Base64.getUrlEncoder().withoutPadding().encodeToString(key));
        st.executeUpdate();
      }
      try (java.sql.PreparedStatement st = c.prepareStatement("SELECT max(value) FILTER (WHERE key = 'installation_id'), "
          + "max(value) FILTER (WHERE key = 'cursor_key') FROM mesh_meta");
           java.sql.ResultSet rs = st.executeQuery()) {
        rs.next();
        return new Meta(rs.getString(1) == null ? "unknown" : rs.getString(1), Base64.getUrlDecoder().decode(rs.getString(2)));
      }
    }
  }

  /** A plain JDBC connection, for the command line tools and the start sequence (the service uses the reactive pool). */
  public Connection jdbc() throws SQLException {
    java.util.Properties props = new java.util.Properties();
    if (connectOptions.getUser() != null) props.setProperty("user", connectOptions.getUser());
    if (connectOptions.getPassword() != null) props.setProperty("password", connectOptions.getPassword());
    props.setProperty("connectTimeout", "5");
    props.setProperty("loginTimeout", "10");
    return DriverManager.getConnection(jdbcUrl, props);
  }

  public Pool pool(Vertx vertx, int size) {
    PoolOptions poolOptions = new PoolOptions()
        .setMaxSize(size)
        .setMaxWaitQueueSize(10_000)
        .setConnectionTimeout(5)
        .setIdleTimeout(60);
    // A dead database must fail requests fast (503), not hang them.
    NetClientOptions net = new NetClientOptions().setConnectTimeout(3000).setTcpKeepAlive(true).setMetricsName("postgres");
    PgConnectOptions opts = new PgConnectOptions(connectOptions);
    opts.setMetricsName("postgres");
    return PgBuilder.pool().with(poolOptions).with(net).connectingTo(opts).using(vertx).build();
  }

  /**
   * The read pool: connections of their own for lists and counts whose cost grows with the data, so
   * that however slow they get they never take the main pool's connections (heartbeat flushes,
   * enrollments, policy updates); and on each of them PostgreSQL cancels a statement after
   * {@code timeout} (SQLSTATE 57014, answered 503 {@code query_timeout}). Few waiters: beyond
   * {@code size x 32} requests queue no more (503). Each statement is planned for its own values
   * ({@code plan_cache_mode = force_custom_plan}): a cached generic plan cannot tell a team of ten
   * rows from a team of a million, and could walk a fleet-wide index to fill a small team's page
   * (load-tests/ops-list-cost.sh); planning a list costs well under a millisecond.
   */
  public Pool readPool(Vertx vertx, int size, Duration timeout) {
    PoolOptions poolOptions = new PoolOptions()
        .setMaxSize(size)
        .setMaxWaitQueueSize(size * 32)
        .setConnectionTimeout(5)
        .setIdleTimeout(60)
        .setName("meshplane-reads");
    PgConnectOptions opts = new PgConnectOptions(connectOptions).addProperty("statement_timeout", Long.toString(timeout.toMillis()))
        .addProperty("plan_cache_mode", "force_custom_plan");
    opts.setMetricsName("postgres-reads"); // its meters apart from the main pool's (Observability's labels)
    NetClientOptions net = new NetClientOptions().setConnectTimeout(3000).setTcpKeepAlive(true).setMetricsName("postgres-reads");
    return PgBuilder.pool().with(poolOptions).with(net).connectingTo(opts).using(vertx).build();
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
