package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestReplicas;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * postgres.url=embedded: the process runs its own PostgreSQL, migrates it, serves, and keeps its data
 * across restarts; that PostgreSQL takes no connection without its generated secret, and the command
 * line attaches with it.
 */
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

      // the secret: beside the data, readable by this account only
      Path secret = dir.resolve("pg.secret");
      assertTrue(Files.exists(secret));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)));
      int port = app.database().connectOptions().getPort();
      String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
      // any local account that knows the port: refused without the secret, whatever user it claims
      for (String user : List.of("postgres", "meshplane")) {
        SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(url, user, "").close());
        // 08004: the server asked for a SCRAM password (the driver gives up before sending none); 28xxx: refused
        assertTrue(List.of("08004", "28P01", "28000").contains(e.getSQLState()), e.getSQLState() + " " + e.getMessage());
        assertThrows(SQLException.class, () -> DriverManager.getConnection(url, user, "guess").close());
      }
      try (Connection c = DriverManager.getConnection(url, "postgres", Files.readString(secret).trim())) {
        assertTrue(c.isValid(5));
      }
      try (ResultSet rs = app.database().jdbc().createStatement().executeQuery(
          "SELECT count(*) FROM pg_hba_file_rules WHERE 'trust' = auth_method")) {
        rs.next();
        assertEquals(0, rs.getInt(1), "no trust line left in pg_hba.conf");
      }

      // the command line attaches to the running replica's PostgreSQL with the same secret
      Path out = dir.resolve("token.out");
      Process p = ChildJvm.launch(dir, Map.of("MESH_PG_EMBEDDED_DIR", dir.resolve("pg").toString(),
              "MESH_KEYS_DIR", replicas.keysDir().toString()), dir.resolve("token.err"), out,
          "token", "create", "--name", "embedded admin", "--team", "*", "--environment", "*", "--surface", "admin", "--expires", "1d");
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), Files.readString(dir.resolve("token.err")));
      String token = Files.readString(out).trim();
      assertEquals(200, http.get(app.coordinatorPort(), "/v1/auth/whoami", token).statusCode());
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

  @Test
  void aDataFolderThatTrustedEveryoneIsConvertedAtItsNextStart() throws Exception {
    Path pg = dir.resolve("old");
    Map<String, String> embedded = Map.of("postgres.embedded_dir", pg.toString());
    try (TestReplicas replicas = new TestReplicas(1)) {
      replicas.start(0, "embedded", embedded);
    }
    // as an older version left it: trust authentication, no secret file
    Path hba = pg.resolve("pg_hba.conf");
    Files.writeString(hba, Files.readString(hba).replace("scram-sha-256", "trust"));
    Files.delete(dir.resolve("old.secret"));
    try (TestReplicas replicas = new TestReplicas(1); Http http = new Http()) {
      Meshplane app = replicas.start(0, "embedded", embedded);
      assertEquals(200, http.get(app.coordinatorPort(), "/readyz").statusCode());
      String url = "jdbc:postgresql://127.0.0.1:" + app.database().connectOptions().getPort() + "/postgres";
      assertThrows(SQLException.class, () -> DriverManager.getConnection(url, "postgres", "").close());
      assertTrue(Files.exists(dir.resolve("old.secret")));
      try (Connection c = app.database().jdbc(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_hba_file_rules WHERE 'trust' = auth_method")) {
        rs.next();
        assertEquals(0, rs.getInt(1), "no trust line left in pg_hba.conf");
      }
    }
  }
}
