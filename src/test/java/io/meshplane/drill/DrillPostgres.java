package io.meshplane.drill;

import io.meshplane.testing.FreePorts;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;

/**
 * The drill's own PostgreSQL server (the embedded binaries the service ships with, in the drill's
 * folder, on a fixed loopback port), so that the drill can restart a real server: {@link #stop()} is
 * PostgreSQL's fast shutdown (every session terminated, new connections refused), {@link #start()}
 * brings the same data directory back on the same port. The machine's shared PostgreSQL is never
 * touched.
 */
final class DrillPostgres implements AutoCloseable {
  private final Path data;
  private final int port = FreePorts.next();
  private EmbeddedPostgres server;

  DrillPostgres(Path data) {
    this.data = data;
    start();
  }

  synchronized void start() {
    try {
      server = EmbeddedPostgres.builder()
          .setDataDirectory(data)
          .setCleanDataDirectory(false)
          .setPort(port)
          .setRegisterShutdownHook(false)
          .setPGStartupWait(Duration.ofSeconds(60))
          .setServerConfig("listen_addresses", "127.0.0.1")
          .setServerConfig("max_connections", "100")
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("the drill's PostgreSQL did not start", e);
    }
  }

  /** PostgreSQL's fast shutdown: open sessions are terminated, the server is gone until {@link #start()}. */
  synchronized void stop() {
    try {
      if (server != null) server.close();
      server = null;
    } catch (IOException e) {
      throw new UncheckedIOException("the drill's PostgreSQL did not stop", e);
    }
  }

  String url() {
    return "postgresql://postgres@127.0.0.1:" + port + "/postgres";
  }

  Connection connect() throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", "");
  }

  @Override
  public void close() {
    stop();
  }
}
