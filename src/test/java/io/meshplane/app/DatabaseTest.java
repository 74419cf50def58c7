package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.TestDatabase;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import java.net.ConnectException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;

/** Which failures a starting replica waits out, and which stop it; what the read pool's connections are set to. */
class DatabaseTest {
  /**
   * The read pool's connections cancel a statement at postgres.read_timeout and plan every statement for
   * its own values: a cached generic plan cannot tell a small team from a large one
   * (load-tests/ops-list-cost.sh: 1,000,000 rows read for a team without operations).
   */
  @Test
  void theReadPoolHasItsTimeoutAndPlansEachStatementForItsValues() throws Exception {
    Vertx vertx = Vertx.vertx();
    try (TestDatabase db = TestDatabase.create();
         Database d = Database.open(ConfigLoader.load(null, false, Map.of(), Map.of("postgres.url", db.url())))) {
      Pool reads = d.readPool(vertx, 1, Duration.ofMillis(1234));
      try {
        Row r = reads.query("SELECT current_setting('plan_cache_mode'), current_setting('statement_timeout')").execute()
            .await(20, TimeUnit.SECONDS).iterator().next();
        assertEquals("force_custom_plan", r.getString(0));
        assertEquals("1234ms", r.getString(1));
      } finally {
        reads.close().await(20, TimeUnit.SECONDS);
      }
    } finally {
      vertx.close().await(20, TimeUnit.SECONDS);
    }
  }

  @Test
  void unreachableIsRetriedRefusedIsFatalAndAFailingMigrationIsNeither() {
    SQLException refused = new SQLException("Connection to 127.0.0.1:5432 refused", "08001", new ConnectException("refused"));
    SQLException starting = new SQLException("the database system is starting up", "57P03");
    SQLException password = new SQLException("password authentication failed for user x", "28P01");
    SQLException noDatabase = new SQLException("database x does not exist", "3D000");
    SQLException syntax = new SQLException("syntax error at or near x", "42601");
    FlywayException checksum = new FlywayException("Validate failed: Migration checksum mismatch for migration version 3");

    assertTrue(Database.isUnreachable(new FlywayException("unable to connect", refused)));
    assertTrue(Database.isUnreachable(starting));
    assertFalse(Database.isFatal(refused));

    assertTrue(Database.isFatal(new FlywayException("unable to obtain connection", password)));
    assertTrue(Database.isFatal(noDatabase));
    assertFalse(Database.isUnreachable(password));

    assertFalse(Database.isUnreachable(new FlywayException("migration failed", syntax)));
    assertFalse(Database.isFatal(syntax));
    assertFalse(Database.isUnreachable(checksum));
  }
}
