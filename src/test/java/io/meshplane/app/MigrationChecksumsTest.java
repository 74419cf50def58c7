package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.common.MigrationChecksums;
import io.meshplane.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A database migrated by an earlier release, whose migrations V2, V3, V6, V7 and V8 had other comments,
 * still starts: the start records the new checksums before Flyway validates, and touches no other row.
 */
class MigrationChecksumsTest {
  /**
   * The comment lines as they shipped before the rewording (the {@code §} is written as an escape: the
   * old lines cited a document that is not part of this repository).
   */
  static final Map<String, Map<String, String>> OLD_LINES = Map.of(
      "V2__tokens_and_audit.sql", Map.of("-- Scoped tokens (docs/API.md §3, §5).", "-- Scoped tokens (SPEC \u00a73).",
          "-- Audit trail (docs/API.md §7):", "-- Audit trail (SPEC \u00a76):"),
      "V3__nodes.sql", Map.of("-- Nodes (docs/API.md §8).", "-- Nodes (SPEC \u00a74)."),
      "V6__policy.sql", Map.of("(docs/API.md §10, §11).", "(SPEC \u00a74, \u00a75)."),
      "V7__operations.sql", Map.of("(docs/API.md §9).", "(SPEC \u00a74, \u00a75)."),
      "V8__users.sql", Map.of("-- Panel users (docs/API.md §17):", "-- Panel users (SPEC \u00a77):"));

  @Test
  void aDatabaseMigratedWithTheOldCommentsMigratesWithoutAValidationError(@TempDir Path old) throws Exception {
    // this jar's migrations with the old comments put back, as an earlier release shipped them
    try (Stream<Path> files = Files.list(Path.of("src/main/resources/db/migration"))) {
      for (Path f : files.toList()) {
        String text = Files.readString(f, StandardCharsets.UTF_8);
        for (Map.Entry<String, String> e : OLD_LINES.getOrDefault(f.getFileName().toString(), Map.of()).entrySet()) {
          if (!text.contains(e.getKey())) throw new AssertionError(f + " no longer holds " + e.getKey());
          text = text.replace(e.getKey(), e.getValue());
        }
        Files.writeString(old.resolve(f.getFileName()), text, StandardCharsets.UTF_8);
      }
    }
    try (TestDatabase db = TestDatabase.create()) {
      String jdbc = "jdbc:postgresql://" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/" + db.name();
      Flyway.configure().dataSource(jdbc, TestDatabase.USER, "").locations("filesystem:" + old).load().migrate();
      // Flyway's own checksums of the old files are the "before" values of the table
      Map<String, Integer> before = new TreeMap<>();
      Map<String, Integer> after = new TreeMap<>();
      for (MigrationChecksums.Change ch : MigrationChecksums.CHANGES) {
        before.put(ch.version(), ch.before());
        after.put(ch.version(), ch.after());
      }
      assertEquals(before, checksums(db, before.keySet()));
      int untouched = checksums(db, java.util.Set.of("1")).get("1");

      // the start's migration: validation passes, the five rows carry the new checksums, nothing else changed
      try (Database d = Database.open(ConfigLoader.load(null, false, Map.of(), Map.of("postgres.url", db.url())))) {
        d.migrate();
        assertEquals(after, checksums(db, after.keySet()));
        assertEquals(untouched, checksums(db, java.util.Set.of("1")).get("1"));
        d.migrate(); // a second start: nothing to realign, still valid
      }

      // a history row whose checksum is neither the old nor the new one is left to fail validation
      try (Connection c = db.connect(); Statement st = c.createStatement()) {
        st.executeUpdate("UPDATE flyway_schema_history SET checksum = 12345 WHERE version = '3'");
        assertEquals(0, MigrationChecksums.realign(c, "flyway_schema_history"));
      }
      assertEquals(12345, checksums(db, java.util.Set.of("3")).get("3"));
    }
  }

  private static Map<String, Integer> checksums(TestDatabase db, java.util.Set<String> versions) throws Exception {
    Map<String, Integer> out = new TreeMap<>();
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT version, checksum FROM flyway_schema_history WHERE version IS NOT NULL")) {
      while (rs.next()) {
        if (versions.contains(rs.getString(1))) out.put(rs.getString(1), rs.getInt(2));
      }
    }
    return out;
  }
}
