package io.meshplane.common;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Migrations whose comments were reworded after they shipped, and the checksums Flyway computes for
 * them before and after. A comment is part of a migration's checksum, so a database migrated with the
 * old text would fail Flyway's validation ("checksum mismatch") against this jar. The SQL itself is
 * unchanged, so the fix is to record the new checksum: {@link #realign} rewrites exactly the
 * (version, old checksum) pairs listed here, and nothing else (a history row with any other checksum
 * still fails validation, as it should). Everyone who runs this jar's migrations against a database that
 * may hold an older history calls it first: the start and the command-line tools ({@code app.Database})
 * and a snapshot restore, whose dump carries the history of the database it was taken from.
 */
public final class MigrationChecksums {
  /** One reworded migration: its version and Flyway's checksum of the old and of the new file. */
  public record Change(String version, int before, int after) {}

  /**
   * Comments of V2, V3, V6, V7 and V8 that cited a document outside the repository now cite
   * docs/API.md; the SQL is byte for byte the same.
   */
  public static final List<Change> CHANGES = List.of(
      new Change("2", 142675127, -1666204617),
      new Change("3", -1481313546, 1470397044),
      new Change("6", 1876238885, -2040792758),
      new Change("7", 46776706, 1229288579),
      new Change("8", -1744175275, -950239236));

  private MigrationChecksums() {}

  /**
   * Rewrites the old checksums of {@link #CHANGES} in {@code history} (a table name, schema-qualified
   * when the connection's search path does not find it) in one statement; nothing when the table does
   * not exist yet (a fresh database). Returns the number of rows rewritten.
   */
  public static int realign(Connection c, String history) throws SQLException {
    try (Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT to_regclass('" + history + "') IS NOT NULL")) {
        rs.next();
        if (!rs.getBoolean(1)) return 0;
      }
      String values = CHANGES.stream().map(ch -> "('" + ch.version() + "', " + ch.before() + ", " + ch.after() + ")")
          .collect(Collectors.joining(", "));
      return st.executeUpdate("UPDATE " + history + " h SET checksum = v.after FROM (VALUES " + values + ") AS v(version, before, after)"
          + " WHERE h.version = v.version AND h.checksum = v.before");
    }
  }
}
