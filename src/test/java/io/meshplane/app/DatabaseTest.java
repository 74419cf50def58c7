package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ConnectException;
import java.sql.SQLException;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;

/** Which failures a starting replica waits out, and which stop it. */
class DatabaseTest {
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
