package io.meshplane.testing;

import io.meshplane.app.Component;
import io.meshplane.app.ConfigLoader;
import io.meshplane.app.MeshConfig;
import io.meshplane.app.Meshplane;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Starts real replicas in this JVM: real HTTP on free loopback ports, a real Hazelcast member each
 * (loopback only, multicast off, a cluster name of its own so test classes never meet), real PostgreSQL.
 * All replicas of one instance share a cluster, a database and a signing-keys folder, like a deployment.
 */
public final class TestReplicas implements AutoCloseable {
  private final String clusterName = "mp-test-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
  private final List<Integer> clusterPorts = new ArrayList<>();
  private final List<Meshplane> started = new ArrayList<>();
  private final Path keysDir;
  private final int size;

  /** @param size how many members the cluster is planned for (each is listed in every member's join list) */
  public TestReplicas(int size) {
    this.size = size;
    for (int i = 0; i < size; i++) clusterPorts.add(FreePorts.next());
    try {
      this.keysDir = Files.createTempDirectory("mp-keys");
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  public MeshConfig config(int index, String postgresUrl, Map<String, String> extra) {
    Map<String, String> o = new HashMap<>();
    o.put("http.host", "127.0.0.1");
    o.put("http.port", "0");
    o.put("panel.port", "0");
    o.put("http.instances", "2");
    o.put("postgres.url", postgresUrl);
    o.put("postgres.pool_size", "4");
    o.put("cluster.name", clusterName);
    o.put("cluster.host", "127.0.0.1");
    o.put("cluster.port", String.valueOf(clusterPorts.get(index)));
    List<String> members = new ArrayList<>();
    for (int p : clusterPorts) members.add("127.0.0.1:" + p);
    o.put("cluster.members", String.join(",", members));
    o.put("auth.keys_dir", keysDir.toString());
    o.put("shutdown.grace", "1s");
    o.putAll(extra);
    return ConfigLoader.load(null, false, Map.of(), o);
  }

  public Meshplane start(int index, String postgresUrl) {
    return start(index, postgresUrl, Map.of());
  }

  public Meshplane start(int index, String postgresUrl, Map<String, String> extra) {
    return track(Meshplane.start(config(checked(index), postgresUrl, extra), EnumSet.allOf(Component.class)));
  }

  /** The first phase only ({@link Meshplane#launch}): probes served, the rest of the start still under way. */
  public Meshplane launch(int index, String postgresUrl, Map<String, String> extra) {
    return track(Meshplane.launch(config(checked(index), postgresUrl, extra), EnumSet.allOf(Component.class)));
  }

  private int checked(int index) {
    if (index >= size) throw new IllegalArgumentException("replica " + index + " is outside the planned cluster of " + size);
    return index;
  }

  private Meshplane track(Meshplane m) {
    synchronized (started) {
      started.add(m);
    }
    return m;
  }

  public Path keysDir() {
    return keysDir;
  }

  @Override
  public void close() {
    List<Meshplane> all;
    synchronized (started) {
      all = new ArrayList<>(started);
      started.clear();
    }
    for (Meshplane m : all) m.close();
  }
}
