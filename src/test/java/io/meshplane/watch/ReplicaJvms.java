package io.meshplane.watch;

import io.meshplane.testing.Await;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestDatabase;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Replicas as separate JVMs (the real {@code meshplane run}, as the cluster drill starts them) in one
 * Hazelcast cluster, on a fresh database of the machine's PostgreSQL, so that a test can SIGKILL one:
 * a replica in the test's own JVM cannot die without a goodbye. Small pools, one HTTP verticle, a short
 * write-behind flush.
 */
final class ReplicaJvms implements AutoCloseable {
  private final Path dir;
  private final TestDatabase db = TestDatabase.create();
  private final int[] httpPorts;
  private final int[] panelPorts;
  private final int[] clusterPorts;
  private final Process[] processes;
  private int clis;

  ReplicaJvms(Path dir, int replicas) {
    this.dir = dir;
    httpPorts = new int[replicas];
    panelPorts = new int[replicas];
    clusterPorts = new int[replicas];
    processes = new Process[replicas];
    for (int i = 0; i < replicas; i++) {
      httpPorts[i] = FreePorts.next();
      panelPorts[i] = FreePorts.next();
      clusterPorts[i] = FreePorts.next();
    }
  }

  /** Starts every replica at once and waits until each answers {@code /readyz} and the first has seen them all join. */
  void start(Http http) throws IOException {
    for (int i = 0; i < processes.length; i++) processes[i] = ChildJvm.launch(dir, env(i), log(i), null, "run");
    for (int i = 0; i < processes.length; i++) {
      int replica = i;
      Await.until("replica " + (i + 1) + " ready", 120_000, () -> {
        if (!processes[replica].isAlive()) throw new IllegalStateException("replica " + (replica + 1) + " exited: " + Files.readString(log(replica)));
        try {
          return http.get(httpPorts[replica], "/readyz").statusCode();
        } catch (Exception | AssertionError notYet) {
          return 0; // not listening yet
        }
      }, s -> s == 200);
    }
    Await.inLog(log(0), "Members \\{size:" + processes.length + ",", processes[0], 60_000);
  }

  int port(int replica) {
    return httpPorts[replica];
  }

  Path log(int replica) {
    return dir.resolve("replica-" + (replica + 1) + ".log");
  }

  /** SIGKILL: no shutdown hook, no draining, no goodbye to the cluster. */
  void kill(int replica) throws InterruptedException {
    processes[replica].destroyForcibly();
    if (!processes[replica].waitFor(30, TimeUnit.SECONDS)) throw new IllegalStateException("replica " + (replica + 1) + " survived SIGKILL");
  }

  /** The CLI in a child JVM with replica 1's settings; its last line of output. */
  String cli(String... args) throws Exception {
    Path out = dir.resolve("cli-" + (++clis) + ".out");
    Process p = ChildJvm.launch(dir, env(0), dir.resolve("cli.log"), out, args);
    if (!p.waitFor(90, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException("meshplane " + String.join(" ", args) + " failed: " + Files.readString(dir.resolve("cli.log")));
    }
    List<String> lines = Files.readAllLines(out);
    return lines.get(lines.size() - 1).trim();
  }

  private Map<String, String> env(int i) {
    Map<String, String> env = new HashMap<>();
    env.put("MESH_PG_URL", db.url());
    env.put("MESH_PG_POOL_SIZE", "4");
    env.put("MESH_PG_READ_POOL_SIZE", "2");
    env.put("MESH_HTTP_HOST", "127.0.0.1");
    env.put("MESH_HTTP_PORT", String.valueOf(httpPorts[i]));
    env.put("MESH_PANEL_PORT", String.valueOf(panelPorts[i]));
    env.put("MESH_HTTP_INSTANCES", "1");
    env.put("MESH_CLUSTER_NAME", "watch-kill-" + clusterPorts[0]);
    env.put("MESH_CLUSTER_HOST", "127.0.0.1");
    env.put("MESH_CLUSTER_PORT", String.valueOf(clusterPorts[i]));
    List<String> members = new ArrayList<>();
    for (int p : clusterPorts) members.add("127.0.0.1:" + p);
    env.put("MESH_CLUSTER_MEMBERS", String.join(",", members));
    env.put("MESH_KEYS_DIR", dir.resolve("keys").toString());
    env.put("MESH_FLUSH_INTERVAL", "100ms");
    // no node may go stale during the test: staleness would change its peers' answers under the test's feet
    env.put("MESH_STALE_AFTER", "10m");
    env.put("MESH_SHUTDOWN_GRACE", "1s");
    env.put("MESH_WATCH_DRAIN", "1s");
    return env;
  }

  @Override
  public void close() {
    for (Process p : processes) if (p != null && p.isAlive()) p.destroy();
    for (Process p : processes) {
      try {
        if (p != null && !p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    db.close();
  }
}
