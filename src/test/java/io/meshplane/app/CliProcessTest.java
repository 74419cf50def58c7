package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
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
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-Dhazelcast.wait.seconds.before.join=1",
        "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), "io.meshplane.Main"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("MESH_"));
    pb.environment().putAll(env);
    return pb.start();
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
  void runServesAndSigtermStopsItCleanlyWithinTenSeconds() throws Exception {
    try (TestDatabase db = TestDatabase.create(); Http http = new Http()) {
      int clusterPort = FreePorts.next();
      Path log = dir.resolve("run.log");
      Process p = launch(Map.of(
          "MESH_PG_URL", db.url(), "MESH_HTTP_HOST", "127.0.0.1", "MESH_HTTP_PORT", "0", "MESH_PANEL_PORT", "0",
          "MESH_CLUSTER_HOST", "127.0.0.1", "MESH_CLUSTER_PORT", String.valueOf(clusterPort),
          "MESH_CLUSTER_MEMBERS", "127.0.0.1:" + clusterPort, "MESH_CLUSTER_NAME", "cli-test-" + clusterPort,
          "MESH_KEYS_DIR", dir.resolve("keys").toString()), log, "run");
      try {
        int port = awaitPort(log, "coordinator API listening on 127.0.0.1:(\\d+)", p);
        int panel = awaitPort(log, "web panel listening on 127.0.0.1:(\\d+)", p);
        assertEquals(200, http.get(port, "/readyz").statusCode());
        assertEquals(200, http.get(panel, "/readyz").statusCode());

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

  private static int awaitPort(Path log, String regex, Process p) throws Exception {
    Pattern pattern = Pattern.compile(regex);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      if (Files.exists(log)) {
        Matcher m = pattern.matcher(Files.readString(log));
        if (m.find()) return Integer.parseInt(m.group(1));
      }
      if (!p.isAlive()) throw new AssertionError("the service exited: " + Files.readString(log));
      Thread.sleep(200);
    }
    throw new AssertionError("no '" + regex + "' in the log: " + Files.readString(log));
  }
}
