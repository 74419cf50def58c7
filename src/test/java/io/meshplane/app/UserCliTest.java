package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.TestReplicas;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code meshplane user create} as an operator runs it (docs/OPERATIONS.md, "user create"): a child JVM
 * against a test database, the password from stdin or from {@code --password-env}; the user it prints
 * is stored with an argon2id hash and signs in on the panel of a replica started afterwards; bad values
 * are refused with exit code 2 before the database is opened; an unreachable database is exit code 3.
 */
@Timeout(300)
class UserCliTest {
  private static final String PASSWORD = "a long cli passphrase 42";
  private static final String ENV_PASSWORD = "another cli passphrase from the environment";

  static TestDatabase db;
  static Http http;

  @TempDir Path dir;

  @BeforeAll
  static void database() {
    db = TestDatabase.create();
    http = new Http();
  }

  @AfterAll
  static void drop() {
    if (http != null) http.close();
    if (db != null) db.close();
  }

  /** What one run of the command left: its exit code, stdout and stderr. */
  record Run(int code, String out, String err) {
    String all() {
      return "exit " + code + "\nstdout: " + out + "\nstderr: " + err;
    }
  }

  private Run run(Map<String, String> extraEnv, String stdin, String... args) throws Exception {
    return run(db.url(), extraEnv, stdin, args);
  }

  /** Runs {@code meshplane user create ARGS} with MESH_PG_URL = {@code pgUrl}, {@code stdin} as its input (then closed). */
  private Run run(String pgUrl, Map<String, String> extraEnv, String stdin, String... args) throws Exception {
    Map<String, String> env = new HashMap<>(extraEnv);
    env.put("MESH_PG_URL", pgUrl);
    List<String> all = new ArrayList<>(List.of("user", "create"));
    all.addAll(List.of(args));
    String tag = Long.toHexString(System.nanoTime());
    Path out = dir.resolve(tag + ".out");
    Path err = dir.resolve(tag + ".err");
    Process p = ChildJvm.launch(dir, env, err, out, all.toArray(String[]::new));
    try (OutputStream in = p.getOutputStream()) {
      if (stdin != null) in.write(stdin.getBytes(StandardCharsets.UTF_8));
    }
    try {
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the command ends by itself: " + Files.readString(err));
    } finally {
      p.destroyForcibly();
    }
    return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  private static String[] user(String username, String role) {
    return new String[] {"--username", username, "--role", role, "--team", "*", "--environment", "*"};
  }

  @Test
  void aUserFromStdinOrFromTheEnvironmentIsStoredHashedAndSignsInOnThePanel() throws Exception {
    // the password as the first line of standard input (no terminal)
    Run fromStdin = run(Map.of(), PASSWORD + "\nthe second line is not read\n", user("First.Admin", "admin"));
    assertEquals(0, fromStdin.code(), fromStdin.all());
    List<String> lines = fromStdin.out().lines().toList();
    assertEquals(1, lines.size(), "stdout is the user as one line of JSON and nothing else: " + fromStdin.all());
    JsonObject admin = new JsonObject(lines.get(0));
    assertTrue(admin.getString("id").startsWith("usr_"), admin.encode());
    assertEquals("first.admin", admin.getString("username"), "stored lower-case");
    assertEquals("admin", admin.getString("role"));
    assertEquals("*", admin.getString("team"));
    assertEquals("*", admin.getString("environment"));
    assertEquals(false, admin.getBoolean("disabled"));
    assertNull(admin.getValue("last_login_at"));
    assertEquals("cli:" + System.getProperty("user.name"), admin.getString("created_by"));
    assertFalse(admin.containsKey("password") || admin.containsKey("password_hash"), admin.encode());
    assertNoSecret(fromStdin, PASSWORD);

    // the password from the variable named by --password-env (stdin is not read then)
    Run fromEnv = run(Map.of("OPS_PW", ENV_PASSWORD), "not the password\n", "--username", "otto", "--role", "operator", "--team",
        "team-a", "--environment", "prod", "--password-env", "OPS_PW");
    assertEquals(0, fromEnv.code(), fromEnv.all());
    JsonObject operator = new JsonObject(fromEnv.out().trim());
    assertEquals("otto", operator.getString("username"));
    assertEquals("operator", operator.getString("role"));
    assertEquals("team-a", operator.getString("team"));
    assertEquals("prod", operator.getString("environment"));
    assertNoSecret(fromEnv, ENV_PASSWORD);

    // stored as an argon2id hash with the documented parameters, never the password; audited as the CLI
    for (String[] u : List.of(new String[] {"first.admin", PASSWORD}, new String[] {"otto", ENV_PASSWORD})) {
      String hash = column("SELECT password_hash FROM users WHERE username = ?", u[0]);
      assertTrue(hash.startsWith("$argon2id$v=19$m=19456,t=2,p=1$"), hash);
      assertFalse(hash.contains(u[1]), "the clear password is not stored");
    }
    assertEquals("user.create", column("SELECT action FROM audit_events WHERE target_id = ?", admin.getString("id")));
    assertEquals("cli", column("SELECT actor_type FROM audit_events WHERE target_id = ?", admin.getString("id")));

    // a replica started on the database lets both people in, with the password each was given
    try (TestReplicas replicas = new TestReplicas(1)) {
      Meshplane app = replicas.start(0, db.url(), Map.of("panel.cookie_secure", "false"));
      HttpResponse<Buffer> in = PanelSession.login(http, app.panelPort(), "first.admin", PASSWORD);
      assertEquals(200, in.statusCode(), in.bodyAsString());
      assertEquals(admin.getString("id"), in.bodyAsJsonObject().getJsonObject("user").getString("id"));
      assertTrue(in.bodyAsJsonObject().getJsonArray("permissions").contains("users:manage"), in.bodyAsString());
      HttpResponse<Buffer> otto = PanelSession.login(http, app.panelPort(), "otto", ENV_PASSWORD);
      assertEquals(200, otto.statusCode(), otto.bodyAsString());
      assertEquals("operator", otto.bodyAsJsonObject().getJsonObject("user").getString("role"));
      assertEquals(401, PanelSession.login(http, app.panelPort(), "otto", "not the password").statusCode(), "stdin was not read");
    }
  }

  @Test
  void badValuesAreRefusedWithExitCode2AndNothingIsStored() throws Exception {
    Run taken = run(Map.of(), PASSWORD + "\n", user("taken", "viewer"));
    assertEquals(0, taken.code(), taken.all());

    Map<String, Run> refused = new java.util.LinkedHashMap<>();
    refused.put("password: must be 12-256 characters", run(Map.of(), "too short\n", user("short-pw", "viewer")));
    refused.put("password", run(Map.of(), "a long password with a\ttab in it\n", user("control-pw", "viewer")));
    refused.put("role: must be admin, operator or viewer", run(Map.of(), PASSWORD + "\n", user("bad-role", "root")));
    refused.put("username", run(Map.of(), PASSWORD + "\n", user("has space", "viewer")));
    refused.put("team", run(Map.of(), PASSWORD + "\n", "--username", "bad-team", "--role", "viewer", "--team", "Team A",
        "--environment", "prod"));
    refused.put("--password-env: NOPE is not set", run(Map.of(), PASSWORD + "\n", "--username", "no-env", "--role", "viewer", "--team",
        "*", "--environment", "*", "--password-env", "NOPE"));
    refused.put("no password on stdin", run(Map.of(), "", user("no-stdin", "viewer")));
    refused.put("a user named taken exists", run(Map.of(), PASSWORD + "\n", user("TAKEN", "admin")));
    refused.forEach((message, r) -> {
      assertEquals(2, r.code(), message + ": " + r.all());
      assertTrue(r.err().contains(message), message + ": " + r.all());
      assertTrue(r.err().contains("Usage: meshplane user create"), "the usage follows the message: " + r.all());
      assertEquals("", r.out(), "nothing on stdout when refused: " + r.all());
      assertNoSecret(r, PASSWORD);
    });
    // an unknown option: exit code 2, named (picocli suggests the options it knows rather than the usage)
    Run unknown = run(Map.of(), PASSWORD + "\n", "--username", "x", "--role", "viewer", "--team", "*", "--environment", "*", "--colour");
    assertEquals(2, unknown.code(), unknown.all());
    assertTrue(unknown.err().contains("Unknown option: '--colour'"), unknown.all());
    assertEquals("", unknown.out(), unknown.all());
    // a settings file named but missing is a bad configuration: exit code 2 too
    Run noConfig = run(Map.of(), PASSWORD + "\n", "--username", "no-config", "--role", "viewer", "--team", "*", "--environment", "*",
        "--config", dir.resolve("missing.yaml").toString());
    assertEquals(2, noConfig.code(), noConfig.all());
    assertTrue(noConfig.err().contains("configuration error") && noConfig.err().contains("missing.yaml"), noConfig.all());
    assertEquals("", noConfig.out(), noConfig.all());
    assertEquals(1L, Long.parseLong(column("SELECT count(*) FROM users", null)), "only the first user is stored");
    assertEquals("viewer", column("SELECT role FROM users WHERE username = ?", "taken"), "the duplicate did not replace it");
  }

  @Test
  void valuesAreCheckedBeforeTheDatabaseIsOpenedAndAnUnreachableDatabaseIsExitCode3() throws Exception {
    String nowhere = "postgresql://" + TestDatabase.USER + "@127.0.0.1:" + FreePorts.next() + "/nowhere";
    Run shortPassword = run(nowhere, Map.of(), "too short\n", user("early", "viewer"));
    assertEquals(2, shortPassword.code(), shortPassword.all());
    assertTrue(shortPassword.err().contains("password: must be 12-256 characters"), shortPassword.all());
    Run unreachable = run(nowhere, Map.of(), PASSWORD + "\n", user("late", "viewer"));
    assertEquals(3, unreachable.code(), unreachable.all());
    assertEquals("", unreachable.out(), unreachable.all());
    assertNoSecret(unreachable, PASSWORD);
  }

  private static void assertNoSecret(Run r, String password) {
    assertFalse(r.out().contains(password) || r.err().contains(password), "the password is never printed: " + r.all());
    assertFalse(r.out().contains("$argon2"), "nor its hash: " + r.all());
  }

  /** The first column of the first row (null when there is none). */
  private static String column(String sql, String param) {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(sql)) {
      if (param != null) st.setString(1, param);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    } catch (SQLException e) {
      throw new AssertionError(e);
    }
  }
}
