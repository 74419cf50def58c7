package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.TestReplicas;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The real command line in a child JVM, as an operator runs it: bad settings stop it, SIGTERM stops it cleanly. */
@Timeout(180)
class CliProcessTest {
  @TempDir Path dir;

  private Process launch(Map<String, String> env, Path log, String... args) throws Exception {
    return launch(env, log, null, args);
  }

  /** @param stdout where stdout goes separately from the log (stderr); null = both to {@code log} */
  private Process launch(Map<String, String> env, Path log, Path stdout, String... args) throws Exception {
    return ChildJvm.launch(dir, env, log, stdout, args);
  }

  @Test
  void aBadDurationStopsTheStartWithExitCode2NamingTheKey() throws Exception {
    Path log = dir.resolve("bad-duration.log");
    Process p = launch(Map.of("MESH_HEARTBEAT_INTERVAL", "soon"), log, "run");
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(2, p.exitValue());
    assertTrue(Files.readString(log).contains("heartbeat.interval"), Files.readString(log));
  }

  @Test
  void aBadPortStopsTheStartWithExitCode2NamingTheKey() throws Exception {
    Path log = dir.resolve("bad-port.log");
    Process p = launch(Map.of("MESH_HTTP_PORT", "http"), log, "run");
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(2, p.exitValue());
    assertTrue(Files.readString(log).contains("http.port"), Files.readString(log));
  }

  @Test
  void wrongDatabaseCredentialsStopTheRunWithExitCode2NamingTheSetting() throws Exception {
    try (TestDatabase db = TestDatabase.create()) {
      int clusterPort = FreePorts.next();
      Path log = dir.resolve("bad-role.log");
      Process p = launch(Map.of(
          "MESH_PG_URL", "postgresql://no_such_role:secret-pw@" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/" + db.name(),
          "MESH_HTTP_HOST", "127.0.0.1", "MESH_HTTP_PORT", "0", "MESH_PANEL_PORT", "0",
          "MESH_CLUSTER_HOST", "127.0.0.1", "MESH_CLUSTER_PORT", String.valueOf(clusterPort),
          "MESH_CLUSTER_MEMBERS", "127.0.0.1:" + clusterPort, "MESH_CLUSTER_NAME", "cli-test-" + clusterPort,
          "MESH_KEYS_DIR", dir.resolve("keys").toString()), log, "run");
      try {
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the process stops by itself");
        assertEquals(2, p.exitValue());
        String out = Files.readString(log);
        assertTrue(out.contains("configuration error: PostgreSQL refused this replica") && out.contains("postgres.url"), out);
        assertTrue(!out.contains("secret-pw"), "the password is never logged");
      } finally {
        p.destroyForcibly();
      }
    }
  }

  /**
   * A first start on an empty database, with the logging configuration the jar ships (not the tests'):
   * it logs no WARN and no ERROR, so an operator can treat any warning as worth reading.
   */
  @Test
  void runServesAndSigtermStopsItCleanlyWithinTenSeconds() throws Exception {
    try (TestDatabase db = TestDatabase.create(); Http http = new Http()) {
      int clusterPort = FreePorts.next();
      // fixed ports, as an operator runs it (8080/8081), two coordinator instances sharing one
      int fixedCoordinator = FreePorts.next();
      int fixedPanel = FreePorts.next();
      Path log = dir.resolve("run.log");
      Path shipped = Path.of(CliProcessTest.class.getResource("/logback.xml").toURI());
      Process p = launch(Map.ofEntries(Map.entry("MESH_PG_URL", db.url()), Map.entry("MESH_HTTP_HOST", "127.0.0.1"),
          Map.entry("MESH_HTTP_PORT", String.valueOf(fixedCoordinator)), Map.entry("MESH_PANEL_PORT", String.valueOf(fixedPanel)),
          Map.entry("MESH_HTTP_INSTANCES", "2"), Map.entry("MESH_CLUSTER_HOST", "127.0.0.1"),
          Map.entry("MESH_CLUSTER_PORT", String.valueOf(clusterPort)), Map.entry("MESH_CLUSTER_MEMBERS", "127.0.0.1:" + clusterPort),
          Map.entry("MESH_CLUSTER_NAME", "cli-test-" + clusterPort), Map.entry("MESH_KEYS_DIR", dir.resolve("keys").toString()),
          Map.entry("JAVA_TOOL_OPTIONS", "-Dlogback.configurationFile=" + shipped)), log, "run");
      try {
        int port = awaitPort(log, "coordinator API listening on 127.0.0.1:(\\d+)", p);
        int panel = awaitPort(log, "web panel listening on 127.0.0.1:(\\d+)", p);
        awaitLog(log, "ready: the coordinator API and the web panel are served", p);
        List<String> warnings = Files.readAllLines(log).stream().filter(l -> l.matches("^\\S+ (WARN|ERROR) .*")).toList();
        assertEquals(List.of(), warnings, "the start logs no WARN or ERROR");
        assertTrue(Files.readString(log).matches("(?s).*\\S+ INFO  \\[.*"), "the shipped text format was used");
        assertEquals(200, http.get(port, "/readyz").statusCode());
        assertEquals(200, http.get(panel, "/readyz").statusCode());
        // several connections to each port, held open: the two coordinator instances share the port, and Vert.x
        // registers the connections' gauge once per connection; the gauge counts them all, and nothing is logged
        List<Socket> open = new ArrayList<>();
        try {
          for (int i = 0; i < 3; i++) {
            for (int each : new int[] {port, panel}) open.add(keepAlive(each));
          }
          assertEquals(3 + 1, activeConnections(http, port), "the 3 held open and the scrape's own, over both instances");
          assertEquals(3 + 1, activeConnections(http, panel), "the 3 held open and the scrape's own");
        } finally {
          for (Socket s : open) s.close();
        }
        assertEquals(fixedCoordinator, port);
        assertEquals(fixedPanel, panel);
        List<String> served = Files.readAllLines(log).stream().filter(l -> l.matches("^\\S+ (WARN|ERROR) .*")).toList();
        assertEquals(List.of(), served, "serving requests logs no WARN or ERROR");

        long t0 = System.nanoTime();
        p.destroy(); // SIGTERM
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "stopped within 10 s");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        String out = Files.readString(log);
        assertTrue(out.contains("shutting down") && out.contains("stopped"), out);
        assertTrue(!out.contains("Exception"), "a clean stop logs no exceptions:\n" + out);
        System.out.println("SIGTERM to exit: " + ms + " ms");
      } finally {
        p.destroyForcibly();
      }
    }
  }

  @Test
  void tokenCreatePrintsOnlyAWorkingTokenOnStdout() throws Exception {
    try (TestDatabase db = TestDatabase.create(); Http http = new Http(); TestReplicas replicas = new TestReplicas(1)) {
      Path keys = dir.resolve("shared-keys");
      Map<String, String> env = Map.of("MESH_PG_URL", db.url(), "MESH_KEYS_DIR", keys.toString());
      Path out = dir.resolve("token.out");
      Process p = launch(env, dir.resolve("token.err"), out, "token", "create", "--name", "first admin", "--team", "*",
          "--environment", "*", "--surface", "admin", "--expires", "1d");
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), Files.readString(dir.resolve("token.err")));
      List<String> lines = Files.readAllLines(out);
      assertEquals(1, lines.size(), "stdout is the token and nothing else: " + lines);
      String token = lines.get(0);
      assertTrue(token.matches("^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$"), token);
      assertTrue(!Files.readString(dir.resolve("token.err")).contains(token), "the secret is not logged");

      Meshplane app = replicas.start(0, db.url(), Map.of("auth.keys_dir", keys.toString()));
      var me = http.get(app.coordinatorPort(), "/v1/auth/whoami", token);
      assertEquals(200, me.statusCode(), me.bodyAsString());
      assertEquals("first admin", me.bodyAsJsonObject().getString("name"));
      assertEquals("admin", me.bodyAsJsonObject().getJsonObject("scope").getString("surface"));

      Path out2 = dir.resolve("agent.out");
      Process agent = launch(env, dir.resolve("agent.err"), out2, "token", "create", "--name", "x", "--team", "web",
          "--environment", "prod", "--surface", "agent", "--expires", "1d");
      assertTrue(agent.waitFor(60, TimeUnit.SECONDS));
      assertEquals(2, agent.exitValue());
      assertEquals("", Files.readString(out2));
      Process tooLong = launch(env, dir.resolve("long.err"), dir.resolve("long.out"), "token", "create", "--name", "x", "--team", "web",
          "--environment", "prod", "--surface", "pipeline", "--expires", "91d");
      assertTrue(tooLong.waitFor(60, TimeUnit.SECONDS));
      assertEquals(2, tooLong.exitValue());
      assertTrue(Files.readString(dir.resolve("long.err")).contains("max_lifetime"), Files.readString(dir.resolve("long.err")));
    }
  }

  /** A connection that has had one answer and stays open (HTTP/1.1 keep-alive). */
  private static Socket keepAlive(int port) throws Exception {
    Socket s = new Socket("127.0.0.1", port);
    s.setSoTimeout(5000);
    s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    byte[] head = new byte[12];
    int n = 0;
    while (n < head.length) {
      int r = s.getInputStream().read(head, n, head.length - n);
      if (r < 0) break;
      n += r;
    }
    assertEquals("HTTP/1.1 200", new String(head, 0, n, StandardCharsets.US_ASCII));
    return s;
  }

  /** vertx_http_server_active_connections of the port, from its own /metrics. */
  private static long activeConnections(Http http, int port) {
    String text = http.get(port, "/metrics").bodyAsString();
    Matcher m = Pattern.compile("(?m)^vertx_http_server_active_connections\\{local=\"127\\.0\\.0\\.1:" + port + "\"\\} (\\S+)$")
        .matcher(text);
    assertTrue(m.find(), "the gauge of port " + port + " is exposed");
    return (long) Double.parseDouble(m.group(1));
  }

  private static void awaitLog(Path log, String text, Process p) throws Exception {
    awaitPort(log, Pattern.quote(text) + "()", p, false);
  }

  private static int awaitPort(Path log, String regex, Process p) throws Exception {
    return awaitPort(log, regex, p, true);
  }

  private static int awaitPort(Path log, String regex, Process p, boolean number) {
    String found = Await.inLog(log, regex, p, 90_000);
    return number ? Integer.parseInt(found) : 0;
  }
}
