package io.meshplane.drill;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.core.HazelcastInstance;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.heartbeat.LiveState;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cluster drill (issue 17): three replicas as separate JVMs on one PostgreSQL server of the drill's
 * own, a fleet of nodes heartbeating through all three, and during the run (a) a SIGKILL of one
 * replica, (b) a restart of that PostgreSQL server (stopped, down for a while, started again),
 * (c) a replacement replica, (d) a rolling restart of all three with SIGTERM. Afterwards it measures
 * what a user relies on: every node's last acknowledged heartbeat in the live map and in PostgreSQL,
 * every acknowledged operation still there, the requests that failed other than those in flight at
 * the killed replica, the time until the database converged, and the stale events (none may come from
 * a coordinator fault).
 *
 * <p>Loopback only; every wait is bounded. The short version runs in CI ({@code ClusterDrillTest});
 * {@code load-tests/cluster-drill.sh} runs a longer one with more nodes.
 */
public final class ClusterDrill implements AutoCloseable {
  /** The drill's size and pace. */
  public record Settings(int nodes, long beatEveryMs, long phaseMs, long pgDownMs) {}

  /** What the drill measured. */
  public record Report(Map<String, Object> figures, long heartbeatsLostInMap, long heartbeatsLostInDb, long operationsLost,
      long failedOnLiveReplicas, long failedInFlightAtKilled, long retryDuringTakeover, long convergedMs, long staleEvents) {
    public String table() {
      StringBuilder b = new StringBuilder("cluster drill:\n");
      figures.forEach((k, v) -> b.append(String.format("  %-46s %s%n", k, v)));
      return b.toString();
    }
  }

  private static final int REPLICAS = 3;
  private final Settings settings;
  private final Path dir;
  private final DrillPostgres db;
  private final Http http = new Http();
  private final int[] httpPorts = new int[REPLICAS];
  private final int[] panelPorts = new int[REPLICAS];
  private final int[] clusterPorts = new int[REPLICAS];
  private final Process[] processes = new Process[REPLICAS];
  private final AtomicBoolean[] up = new AtomicBoolean[REPLICAS];
  private final AtomicBoolean[] killed = new AtomicBoolean[REPLICAS];
  /** Requests sent to each replica and not answered yet (a rolling restart waits for its replica's to drain). */
  private final AtomicInteger[] inFlight = new AtomicInteger[REPLICAS];
  /** Held while the driver picks replicas and sends a round, and while a replica is taken out of the rotation. */
  private final Object routing = new Object();
  private final AtomicInteger starts = new AtomicInteger();
  private final Map<String, Long> acked = new ConcurrentHashMap<>();
  private final List<Nodes.Enrolled> fleet = new ArrayList<>();
  private final List<String> operations = new ArrayList<>();
  private final AtomicLong beats = new AtomicLong();
  private final AtomicLong failedLive = new AtomicLong();
  private final AtomicLong failedKilled = new AtomicLong();
  /** 503 + Retry-After from a live replica while the cluster takes over the killed member's partitions. */
  private final AtomicLong retryTakeover = new AtomicLong();
  private volatile long killedAt = -1;
  private final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
  private final Map<String, Object> figures = new LinkedHashMap<>();
  private volatile boolean driving;
  private String admin;

  public ClusterDrill(Settings settings, Path dir) {
    this.settings = settings;
    this.dir = dir;
    this.db = new DrillPostgres(dir.resolve("postgres"));
    for (int i = 0; i < REPLICAS; i++) {
      httpPorts[i] = FreePorts.next();
      panelPorts[i] = FreePorts.next();
      clusterPorts[i] = FreePorts.next();
      up[i] = new AtomicBoolean();
      killed[i] = new AtomicBoolean();
      inFlight[i] = new AtomicInteger();
    }
  }

  public Report run() throws Exception {
    long t0 = System.currentTimeMillis();
    for (int i = 0; i < REPLICAS; i++) start(i);
    for (int i = 0; i < REPLICAS; i++) awaitReady(i);
    figures.put("replicas started (JVMs)", REPLICAS + " in " + (System.currentTimeMillis() - t0) + " ms");
    admin = cli("token", "create", "--name", "drill", "--team", "*", "--environment", "*", "--surface", "admin", "--expires", "1d");
    for (int n = 0; n < settings.nodes(); n++) {
      fleet.add(Nodes.enroll(http, httpPorts[n % REPLICAS], admin, "drill-" + n, "drill", "prod"));
    }
    Thread driver = new Thread(this::drive, "drill-driver");
    driving = true;
    driver.start();
    pause(settings.phaseMs());

    // (a) SIGKILL one replica: the load balancer learns it is gone from the failed requests
    long a = System.currentTimeMillis();
    killed[2].set(true);
    killedAt = System.currentTimeMillis();
    processes[2].destroyForcibly();
    processes[2].waitFor(30, TimeUnit.SECONDS);
    up[2].set(false);
    figures.put("(a) SIGKILL replica 3", "at +" + (a - t0) + " ms");
    // operations acknowledged while a member is missing must survive everything that follows
    for (int i = 0; i < Math.min(5, fleet.size()); i++) {
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, httpPorts[i % 2], "/v1/nodes/" + fleet.get(i).id() + "/rekey", admin,
          new JsonObject());
      if (r.statusCode() == 202) operations.add(r.bodyAsJsonObject().getString("id"));
    }
    pause(settings.phaseMs());

    // (b) PostgreSQL restarts: a real server, stopped (fast shutdown: every session terminated, new
    // connections refused), down for a while, started again on the same data directory
    long b = System.currentTimeMillis();
    db.stop();
    long stoppedIn = System.currentTimeMillis() - b;
    pause(settings.pgDownMs());
    long s = System.currentTimeMillis();
    db.start();
    figures.put("(b) PostgreSQL restarted", "stopped in " + stoppedIn + " ms, down " + settings.pgDownMs() + " ms, started in "
        + (System.currentTimeMillis() - s) + " ms, at +" + (b - t0) + " ms");
    pause(settings.phaseMs());

    // the survivors' second writes of heartbeats whose first one was in flight at the killed member
    long storeRetries = 0;
    for (int i = 0; i < 2; i++) {
      HttpResponse<Buffer> m = http.get(httpPorts[i], "/metrics");
      for (String line : m.bodyAsString().split("\n")) {
        if (line.startsWith("mesh_heartbeat_store_retries_total")) storeRetries += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    figures.put("heartbeat writes retried by the survivors (indeterminate at the kill)", storeRetries);

    // (c) a replacement for the killed replica
    long c = System.currentTimeMillis();
    killed[2].set(false);
    start(2);
    awaitReady(2);
    figures.put("(c) replacement replica ready", (System.currentTimeMillis() - c) + " ms after its start");
    pause(settings.phaseMs());

    // (d) rolling restart with SIGTERM: the load balancer stops sending to a replica, and its connections
    // drain (every request already sent to it is answered), before the replica is stopped. The driver
    // sends a whole round at once, so without the drain a replica was stopped with requests still queued
    // for it in the client's connection pool: the 1,000-node drill saw 32 of them closed.
    long d = System.currentTimeMillis();
    long drainedMax = 0;
    for (int i = 0; i < REPLICAS; i++) {
      synchronized (routing) {
        up[i].set(false); // no round picks it from now on; every round that did has counted its requests
      }
      long drainStart = System.currentTimeMillis();
      long drainDeadline = drainStart + 30_000;
      while (inFlight[i].get() > 0 && System.currentTimeMillis() < drainDeadline) pause(20);
      drainedMax = Math.max(drainedMax, System.currentTimeMillis() - drainStart);
      processes[i].destroy();
      if (!processes[i].waitFor(60, TimeUnit.SECONDS)) throw new IllegalStateException("replica " + (i + 1) + " did not stop on SIGTERM");
      start(i);
      awaitReady(i);
    }
    figures.put("(d) rolling restart of all three (SIGTERM)", (System.currentTimeMillis() - d) + " ms (connections drained in at most "
        + drainedMax + " ms)");
    pause(settings.phaseMs());
    driving = false;
    driver.join(60_000);
    long stopped = System.currentTimeMillis();

    // the database converges to the last acknowledged heartbeat of every node
    long lostInDb;
    long deadline = stopped + 60_000;
    do {
      lostInDb = missingInDatabase();
      if (lostInDb == 0) break;
      pause(250);
    } while (System.currentTimeMillis() < deadline);
    long converged = System.currentTimeMillis() - stopped;
    long lostInMap = missingInLiveMap();
    long opsLost = 0;
    for (String op : operations) {
      if (http.get(httpPorts[0], "/v1/operations/" + op, admin).statusCode() != 200) opsLost++;
    }
    // detected while the nodes were beating: a coordinator fault (after the stop, every node goes stale rightly)
    long stale = count("SELECT count(*) FROM node_events WHERE type = 'node.stale' AND at < to_timestamp(" + stopped + " / 1000.0)");

    figures.put("nodes", settings.nodes() + " (a heartbeat each every " + settings.beatEveryMs() + " ms, round-robin over the live replicas)");
    figures.put("heartbeats acknowledged", beats.get());
    figures.put("requests failed in flight at the killed replica", failedKilled.get());
    figures.put("requests failed otherwise (target 0)", failedLive.get() + (failures.isEmpty() ? "" : " " + failures.subList(0,
        Math.min(3, failures.size()))));
    figures.put("of which 503 + Retry-After from a live replica after the kill", retryTakeover.get());
    figures.put("acknowledged heartbeats lost, live map (target 0)", lostInMap);
    figures.put("acknowledged heartbeats lost, PostgreSQL (target 0)", lostInDb);
    figures.put("database converged after the last heartbeat", converged + " ms");
    figures.put("acknowledged operations lost (target 0)", opsLost + " of " + operations.size());
    figures.put("stale events (target 0)", stale);
    if (lostInDb > 0 || lostInMap > 0 || stale > 0) diagnose();
    figures.put("total", (System.currentTimeMillis() - t0) + " ms");
    return new Report(figures, lostInMap, lostInDb, opsLost, failedLive.get(), failedKilled.get(), retryTakeover.get(), converged, stale);
  }

  /** Every node beats every {@code beatEveryMs}, each beat through the next live replica; answers are checked. */
  private void drive() {
    int round = 0;
    while (driving) {
      long start = System.currentTimeMillis();
      List<Integer> live = new ArrayList<>();
      List<Future<HttpResponse<Buffer>>> sent = new ArrayList<>();
      List<Integer> via = new ArrayList<>();
      synchronized (routing) {
        for (int i = 0; i < REPLICAS; i++) if (up[i].get() || killed[i].get()) live.add(i);
        for (int n = 0; n < fleet.size() && !live.isEmpty(); n++) {
          int replica = live.get((n + round) % live.size());
          via.add(replica);
          AtomicInteger pending = inFlight[replica];
          pending.incrementAndGet();
          sent.add(http.sendAsync(HttpMethod.POST, httpPorts[replica], "/v1/nodes/" + fleet.get(n).id() + "/heartbeat",
              fleet.get(n).token(), Nodes.beat(round)).onComplete(ar -> pending.decrementAndGet()));
        }
      }
      if (live.isEmpty()) {
        pause(100);
        continue;
      }
      for (int n = 0; n < sent.size(); n++) {
        int replica = via.get(n);
        try {
          HttpResponse<Buffer> r = sent.get(n).await(30, TimeUnit.SECONDS);
          if (r.statusCode() == 200) {
            acked.put(fleet.get(n).id(), Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli());
            beats.incrementAndGet();
          } else if (r.statusCode() == 503 && r.getHeader("Retry-After") != null && killedAt > 0) {
            // the heartbeat's map write went to the dead member and its retry failed too: a failure, counted apart
            retryTakeover.incrementAndGet();
            fail(replica, "replica " + (replica + 1) + " answered " + r.statusCode() + " " + r.bodyAsString());
          } else {
            fail(replica, "replica " + (replica + 1) + " answered " + r.statusCode() + " " + r.bodyAsString());
          }
        } catch (Exception e) {
          fail(replica, "replica " + (replica + 1) + ": " + e);
        }
      }
      // the balancer has learned which replica was killed: no more requests go there
      for (int i = 0; i < REPLICAS; i++) if (!up[i].get()) killed[i].set(false);
      round++;
      long rest = settings.beatEveryMs() - (System.currentTimeMillis() - start);
      if (rest > 0) pause(rest);
    }
  }

  private void fail(int replica, String what) {
    if (killed[replica].get()) {
      // in flight at the replica that was killed, or sent before the balancer learned it was gone
      failedKilled.incrementAndGet();
      return;
    }
    failedLive.incrementAndGet();
    failures.add(what);
  }

  private long missingInDatabase() throws Exception {
    Map<String, Long> stored = new HashMap<>();
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = 'drill'")) {
      while (rs.next()) stored.put(rs.getString(1), rs.getLong(2));
    }
    long missing = 0;
    for (Map.Entry<String, Long> e : acked.entrySet()) {
      Long s = stored.get(e.getKey());
      if (s == null || s < e.getValue()) missing++;
    }
    return missing;
  }

  /** What a failed drill needs to be understood from its output alone: the rows behind, each replica's write-behind, the warnings. */
  private void diagnose() {
    try {
      Map<String, Long> stored = new HashMap<>();
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = 'drill'")) {
        while (rs.next()) stored.put(rs.getString(1), rs.getLong(2));
      }
      List<String> behind = new ArrayList<>();
      acked.forEach((id, at) -> {
        Long s = stored.get(id);
        if (s == null || s < at) behind.add(id + " acked " + Instant.ofEpochMilli(at) + " stored " + (s == null ? "-" : Instant.ofEpochMilli(s)));
      });
      figures.put("rows behind (first 5)", behind.subList(0, Math.min(5, behind.size())));
      List<String> events = new ArrayList<>();
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT node_id, at, last_heartbeat FROM node_events WHERE type = 'node.stale' ORDER BY at LIMIT 3")) {
        while (rs.next()) events.add(rs.getString(1) + " at " + rs.getString(2) + " last " + rs.getString(3));
      }
      figures.put("first stale events", events);
    } catch (Exception e) {
      figures.put("rows behind", "not read: " + e);
    }
    for (int i = 0; i < REPLICAS; i++) {
      try {
        List<String> lines = new ArrayList<>();
        for (String line : http.get(httpPorts[i], "/metrics").bodyAsString().split("\n")) {
          if (line.startsWith("mesh_writebehind_") && !line.contains("_bucket")) lines.add(line);
        }
        figures.put("replica " + (i + 1) + " write-behind", lines);
      } catch (Exception | AssertionError e) {
        figures.put("replica " + (i + 1) + " write-behind", "not read: " + e);
      }
    }
    try (var logs = Files.list(dir)) {
      for (Path log : logs.filter(p -> p.getFileName().toString().startsWith("replica-")).sorted().toList()) {
        List<String> warnings = Files.readAllLines(log).stream().filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")).toList();
        figures.put(log.getFileName() + " warnings (" + warnings.size() + ", last 4)", warnings.subList(Math.max(0, warnings.size() - 4),
            warnings.size()));
      }
    } catch (IOException e) {
      figures.put("replica logs", "not read: " + e);
    }
  }

  /**
   * Reads the cluster's live map itself, as a Hazelcast client of the replicas (not through the API,
   * which falls back to the PostgreSQL row when a live entry is missing): per node, the entry must hold
   * the last acknowledged heartbeat or a later one.
   */
  private long missingInLiveMap() {
    ClientConfig cc = new ClientConfig();
    cc.setClusterName("drill-" + clusterPorts[0]);
    cc.setProperty("hazelcast.logging.type", "slf4j");
    cc.setProperty("hazelcast.phone.home.enabled", "false");
    for (int i = 0; i < REPLICAS; i++) if (up[i].get()) cc.getNetworkConfig().addAddress("127.0.0.1:" + clusterPorts[i]);
    cc.getConnectionStrategyConfig().getConnectionRetryConfig().setClusterConnectTimeoutMillis(30_000);
    cc.getSerializationConfig().getCompactSerializationConfig().addSerializer(new LiveNode.Serializer());
    HazelcastInstance client = HazelcastClient.newHazelcastClient(cc);
    try {
      Map<String, LiveNode> live = client.<String, LiveNode>getMap(LiveState.MAP).getAll(acked.keySet());
      long missing = 0;
      for (Map.Entry<String, Long> e : acked.entrySet()) {
        LiveNode l = live.get(e.getKey());
        if (l == null || l.heartbeatAt() < e.getValue()) missing++;
      }
      return missing;
    } finally {
      client.shutdown();
    }
  }

  private long count(String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private Map<String, String> env(int i) {
    Map<String, String> env = new HashMap<>();
    env.put("MESH_PG_URL", db.url());
    env.put("MESH_HTTP_HOST", "127.0.0.1");
    env.put("MESH_HTTP_PORT", String.valueOf(httpPorts[i]));
    env.put("MESH_PANEL_PORT", String.valueOf(panelPorts[i]));
    env.put("MESH_HTTP_INSTANCES", "1");
    env.put("MESH_PG_POOL_SIZE", "4");
    env.put("MESH_CLUSTER_NAME", "drill-" + clusterPorts[0]);
    env.put("MESH_CLUSTER_HOST", "127.0.0.1");
    env.put("MESH_CLUSTER_PORT", String.valueOf(clusterPorts[i]));
    List<String> members = new ArrayList<>();
    for (int p : clusterPorts) members.add("127.0.0.1:" + p);
    env.put("MESH_CLUSTER_MEMBERS", String.join(",", members));
    env.put("MESH_KEYS_DIR", dir.resolve("keys").toString());
    env.put("MESH_HEARTBEAT_INTERVAL", "1s");
    // a node is stale after 15 s without a heartbeat: far longer than any gap the driver leaves, so a
    // stale event can only come from a coordinator fault
    env.put("MESH_STALE_AFTER", "15s");
    env.put("MESH_FLUSH_INTERVAL", "500ms");
    env.put("MESH_SHUTDOWN_GRACE", "2s");
    return env;
  }

  private void start(int i) throws IOException {
    int n = starts.incrementAndGet();
    processes[i] = ChildJvm.launch(dir, env(i), dir.resolve("replica-" + (i + 1) + "-" + n + ".log"), null, "run");
  }

  private void awaitReady(int i) {
    long deadline = System.currentTimeMillis() + 120_000;
    while (System.currentTimeMillis() < deadline) {
      if (!processes[i].isAlive()) throw new IllegalStateException("replica " + (i + 1) + " exited with " + processes[i].exitValue());
      try {
        if (http.get(httpPorts[i], "/readyz").statusCode() == 200) {
          up[i].set(true);
          return;
        }
      } catch (Exception | AssertionError notYet) {
        // not listening yet
      }
      pause(200);
    }
    throw new IllegalStateException("replica " + (i + 1) + " not ready within 120 s");
  }

  private String cli(String... args) throws Exception {
    Path out = dir.resolve("cli-" + starts.incrementAndGet() + ".out");
    Process p = ChildJvm.launch(dir, env(0), dir.resolve("cli.log"), out, args);
    if (!p.waitFor(90, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("meshplane " + String.join(" ", args) + " failed");
    List<String> lines = Files.readAllLines(out);
    return lines.get(lines.size() - 1).trim();
  }

  /** The drill's clock: its phases last a time, its agents beat at a period, and its convergence times are measured by polling. */
  private static void pause(long ms) {
    try {
      Thread.sleep(ms); // not a test's synchronisation: load phases and beat periods are durations, and the drill reports, not asserts
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    driving = false;
    for (Process p : processes) {
      if (p != null && p.isAlive()) p.destroy();
    }
    for (Process p : processes) {
      try {
        if (p != null && !p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    http.close();
    db.close();
  }
}
