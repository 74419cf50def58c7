package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Http;
import io.meshplane.testing.TestReplicas;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** postgres.url=embedded: the process runs its own PostgreSQL, migrates it, serves, and keeps its data across restarts. */
@Timeout(240)
class EmbeddedModeTest {
  @TempDir Path dir;

  @Test
  void startsWithItsOwnPostgresAndKeepsItsDataAcrossARestart() throws Exception {
    Map<String, String> embedded = Map.of("postgres.embedded_dir", dir.resolve("pg").toString());
    String firstId;
    try (TestReplicas replicas = new TestReplicas(1); Http http = new Http()) {
      Meshplane app = replicas.start(0, "embedded", embedded);
      assertTrue(app.database().embedded());
      assertEquals(200, http.get(app.coordinatorPort(), "/readyz").statusCode());
      firstId = app.installationId();
      try (Connection c = app.database().jdbc(); Statement st = c.createStatement()) {
        st.execute("INSERT INTO mesh_meta (key, value) VALUES ('test_marker', 'kept')");
      }
    }
    assertTrue(Files.exists(dir.resolve("pg").resolve("PG_VERSION")), "data lives in the configured folder");
    try (TestReplicas replicas = new TestReplicas(1); Http http = new Http()) {
      Meshplane app = replicas.start(0, "embedded", embedded);
      assertEquals(200, http.get(app.coordinatorPort(), "/readyz").statusCode());
      assertEquals(firstId, app.installationId(), "same database after the restart");
      try (Connection c = app.database().jdbc(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT value FROM mesh_meta WHERE key = 'test_marker'")) {
        assertTrue(rs.next());
        assertEquals("kept", rs.getString(1));
      }
    }
  }
}
