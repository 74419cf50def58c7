package io.meshplane.testing;

import io.meshplane.app.Meshplane;
import java.util.Map;

/**
 * The one fixture for tests that start replicas: a fresh database on the machine's PostgreSQL, a
 * cluster of up to {@code size} real replicas on loopback (see {@link TestReplicas}), an HTTP client,
 * and an admin token ({@code *}/{@code *}) issued through the first replica. {@link #close()} stops
 * everything in the right order and is safe after a failed start.
 */
public final class TestCluster implements AutoCloseable {
  private final TestDatabase db;
  private final TestReplicas replicas;
  private final Http http = new Http();
  private final Meshplane[] started;
  private String admin;

  private TestCluster(int size) {
    this.db = TestDatabase.create();
    this.replicas = new TestReplicas(size);
    this.started = new Meshplane[size];
  }

  /** A cluster planned for {@code size} replicas, none started yet. */
  public static TestCluster of(int size) {
    return new TestCluster(size);
  }

  /** A cluster with {@code size} replicas started, all with the same extra settings. */
  public static TestCluster started(int size, Map<String, String> settings) {
    TestCluster c = new TestCluster(size);
    try {
      for (int i = 0; i < size; i++) c.start(i, settings);
      return c;
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  public static TestCluster started(int size) {
    return started(size, Map.of());
  }

  /** Starts replica {@code index} on the cluster's database (blocking until it serves everything). */
  public Meshplane start(int index, Map<String, String> settings) {
    started[index] = replicas.start(index, db.url(), settings);
    return started[index];
  }

  public Meshplane start(int index) {
    return start(index, Map.of());
  }

  /** Starts replica {@code index} on another way to the database (a fault-injecting proxy, say). */
  public Meshplane start(int index, String postgresUrl, Map<String, String> settings) {
    started[index] = replicas.start(index, postgresUrl, settings);
    return started[index];
  }

  /** The first phase of a start only ({@link Meshplane#launch}): probes served, the rest still under way. */
  public Meshplane launch(int index, String postgresUrl, Map<String, String> settings) {
    started[index] = replicas.launch(index, postgresUrl, settings);
    return started[index];
  }

  /** Replica {@code index}, as started. */
  public Meshplane replica(int index) {
    return started[index];
  }

  /** An admin token for every team and environment, issued once through the first started replica. */
  public String admin() {
    if (admin == null) {
      for (Meshplane m : started) {
        if (m != null) {
          admin = Tokens.admin(m);
          break;
        }
      }
    }
    return admin;
  }

  /**
   * Waits until every started replica has applied the change log up to the last committed change (the
   * clock in PostgreSQL): their boards and models hold everything written so far. Returns that seq.
   * (Every replica started through this fixture is waited on: not for use after closing one.)
   */
  public long awaitChangesApplied() {
    long clock;
    try (java.sql.Connection c = db.connect(); java.sql.Statement st = c.createStatement();
         java.sql.ResultSet rs = st.executeQuery("SELECT seq FROM mesh_clock")) {
      rs.next();
      clock = rs.getLong(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
    for (Meshplane m : started) {
      if (m != null) Await.until("replica " + m.coordinatorPort() + " applied change " + clock, () -> m.changes().position(), p -> p >= clock);
    }
    return clock;
  }

  public Http http() {
    return http;
  }

  public TestDatabase db() {
    return db;
  }

  public TestReplicas replicas() {
    return replicas;
  }

  @Override
  public void close() {
    try {
      http.close();
    } finally {
      try {
        replicas.close();
      } finally {
        db.close();
      }
    }
  }
}
