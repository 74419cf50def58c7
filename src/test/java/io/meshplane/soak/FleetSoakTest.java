package io.meshplane.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fleet soak, short (issue 17): {@code load-tests/fleet-soak.sh} at CI size (10,000 agents at a
 * 10 s interval: about a minute and a half to enroll them all, then two minutes of steady load at
 * 1,000 heartbeats/s with two policy changes, re-keys and relay moves), with the replica and
 * the simulator as child JVMs on this test's class path (no jar needed) and a fresh database of the
 * machine's PostgreSQL. The script checks the targets and exits non-zero when one is missed: simulator
 * errors and non-2xx answers 0, false stale events 0, every re-key and relay move succeeded, every
 * policy change acknowledged by every agent within 3 intervals, no heap growth. Sizes from system properties
 * ({@code soak.nodes}, {@code soak.interval}, {@code soak.duration}, {@code soak.period}).
 */
@Timeout(660)
@Tag("soak") // runs alone, after the other tests (pom.xml, surefire execution "soak")
class FleetSoakTest {
  @Test
  void aSimulatedFleetThroughPolicyChangesReKeysAndRelayMovesMeetsEveryTarget(@TempDir Path dir) throws Exception {
    Path script = Path.of("load-tests", "fleet-soak.sh").toAbsolutePath();
    assertTrue(Files.isRegularFile(script), "no " + script);
    Path out = dir.resolve("soak.out");
    ProcessBuilder pb = new ProcessBuilder("bash", script.toString()).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("MESH_"));
    pb.environment().put("NODES", System.getProperty("soak.nodes", "10000"));
    pb.environment().put("INTERVAL", System.getProperty("soak.interval", "10s"));
    pb.environment().put("DURATION", System.getProperty("soak.duration", "2m"));
    pb.environment().put("PERIOD", System.getProperty("soak.period", "40s"));
    pb.environment().put("SERVICE_XMX", "1g");
    pb.environment().put("SIM_XMX", "512m");
    pb.environment().put("MESHPLANE_CP", System.getProperty("java.class.path"));
    pb.environment().put("JCMD", Path.of(System.getProperty("java.home"), "bin", "jcmd").toString());
    // the run's logs and a GC log stay under target/ (not the temporary directory JUnit removes), so that a
    // failure in CI can be read afterwards: the simulator's 10 s lines, the replica's log, its pauses
    Path logs = Path.of("target", "soak-logs").toAbsolutePath();
    Files.createDirectories(logs);
    pb.environment().put("KEEP_DIR", logs.toString());
    pb.environment().put("SERVICE_OPTS", "-Xlog:gc*,safepoint:file=" + logs.resolve("gc.log") + ":uptime,time,level,tags");
    Process p = pb.start();
    boolean done = p.waitFor(570, TimeUnit.SECONDS);
    if (!done) {
      p.destroy(); // SIGTERM: the script's trap stops the replica and the simulator and drops the database
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
    String output = read(out);
    System.out.println(output);
    assertTrue(done, "the soak did not end within 570 s:\n" + output);
    assertEquals(0, p.exitValue(), "the soak missed a target (exit " + p.exitValue() + "):\n" + output);
    assertTrue(output.contains("all targets met"), output);
    // the latency rows carry the tail: p99.9 of the whole run and of the steady window
    assertTrue(output.matches("(?s).*latency \\(simulator, whole run incl\\. enrollment\\)\\s+p50 \\S+ ms, p99 \\S+ ms, p99\\.9 \\S+ ms.*"), output);
    assertTrue(output.matches("(?s).*latency \\(simulator, from all enrolled to the end\\)\\s+steady window \\(all enrolled, \\d+ s\\) p50 .*"), output);
  }

  private static String read(Path f) throws IOException {
    return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
  }
}
