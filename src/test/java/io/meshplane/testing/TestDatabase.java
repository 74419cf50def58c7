package io.meshplane.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A fresh database on the machine's PostgreSQL (127.0.0.1:5432, user postgres) for one test class;
 * the service's own migrations build its schema when a replica starts. Dropped on close.
 */
public final class TestDatabase implements AutoCloseable {
  public static final String HOST = System.getProperty("test.pg.host", "127.0.0.1");
  public static final int PORT = Integer.getInteger("test.pg.port", 5432);
  public static final String USER = System.getProperty("test.pg.user", "postgres");

  private final String name;

  private TestDatabase(String name) {
    this.name = name;
  }

  public static TestDatabase create() {
    String name = "mp_test_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    try (Connection c = admin(); Statement st = c.createStatement()) {
      st.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create test database (is PostgreSQL up at " + HOST + ":" + PORT + "?): " + e.getMessage(), e);
    }
    return new TestDatabase(name);
  }

  private static Connection admin() throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://" + HOST + ":" + PORT + "/postgres", USER, "");
  }

  public String name() {
    return name;
  }

  /** The URL a replica is configured with. */
  public String url() {
    return url(HOST, PORT);
  }

  /** The same database reached through another address (a fault-injecting proxy). */
  public String url(String host, int port) {
    return "postgresql://" + USER + "@" + host + ":" + port + "/" + name;
  }

  public Connection connect() throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://" + HOST + ":" + PORT + "/" + name, USER, "");
  }

  @Override
  public void close() {
    try (Connection c = admin(); Statement st = c.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop test database " + name + ": " + e.getMessage(), e);
    }
  }
}
