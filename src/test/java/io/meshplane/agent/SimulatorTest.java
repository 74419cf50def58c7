package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code meshplane simulate} as an operator runs it, against a real replica; and its refusals. */
@Timeout(90)
class SimulatorTest {
  static TestCluster cluster;
  static Meshplane replica;
  static String enrollToken;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    replica = cluster.replica(0);
    enrollToken = Tokens.issue(replica, "sim", "lab", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void aShortRunEnrollsEveryNodeHeartbeatsAndPrintsItsSummary() throws Exception {
    Path out = dir.resolve("sim.out");
    Path err = dir.resolve("sim.err");
    long t0 = System.nanoTime();
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:" + replica.coordinatorPort(),
        "--enroll-token", enrollToken, "--nodes", "50", "--interval", "2s", "--duration", "6s", "--name-prefix", "simt", "--tags", "tag:sim,tag:g0", "--spread-tags", "5",
        "--concurrency", "8");
    try {
      assertTrue(p.waitFor(40, TimeUnit.SECONDS), "ends by itself");
      long ms = (System.nanoTime() - t0) / 1_000_000;
      String stdout = Files.readString(out);
      assertEquals(0, p.exitValue(), stdout + Files.readString(err));
      assertTrue(ms < 20_000, "ends soon after --duration: " + ms + " ms");
      assertTrue(stdout.contains("[sim] 50 nodes named simt-"), stdout);
      Matcher done = Pattern.compile("\\[sim] done after ([\\d.]+) s: 50/50 nodes enrolled \\(0 failed, \\d+ attempts\\), (\\d+) heartbeats sent, (\\d+) accepted")
          .matcher(stdout);
      assertTrue(done.find(), stdout);
      double secs = Double.parseDouble(done.group(1));
      assertTrue(secs >= 6 && secs < 9, stdout);
      long accepted = Long.parseLong(done.group(3));
      // each node beats about every 2 s from a start spread over its first interval (about 100-150 in 6 s here); each at least once
      assertTrue(accepted >= 50 && accepted <= 250, stdout);
      assertTrue(stdout.contains("errors: none"), stdout);
      // the tail quantile, and the steady window that starts once every node has enrolled
      assertTrue(Pattern.compile("latency p50 [\\d.]+ ms p99 [\\d.]+ ms p99\\.9 [\\d.]+ ms max [\\d.]+ ms, steady window \\(all enrolled, \\d+ s\\) p50 [\\d.]+ ms p99 [\\d.]+ ms p99\\.9 [\\d.]+ ms")
          .matcher(stdout).find(), stdout);
      System.out.println(stdout);

      JsonObject list = cluster.http().get(replica.coordinatorPort(), "/v1/nodes?name_prefix=simt-&limit=1000", cluster.admin()).bodyAsJsonObject();
      JsonArray items = list.getJsonArray("items");
      assertEquals(50, items.size(), list.encode());
      Map<String, Integer> groups = new java.util.TreeMap<>();
      for (Object o : items) {
        JsonObject n = (JsonObject) o;
        JsonArray tags = n.getJsonArray("tags");
        assertTrue(tags.size() == 2 && tags.contains("tag:sim"), n.encode());
        groups.merge(tags.getString(tags.getString(0).equals("tag:sim") ? 1 : 0), 1, Integer::sum);
        assertTrue(n.getString("heartbeat") != null, "every node heartbeated: " + n.encode());
        assertEquals(Boolean.TRUE, n.getJsonObject("telemetry").getBoolean("simulated"), n.encode());
      }
      assertEquals(Map.of("tag:g0", 10, "tag:g1", 10, "tag:g2", 10, "tag:g3", 10, "tag:g4", 10), groups, "--spread-tags 5 spreads the fleet evenly");
    } finally {
      p.destroyForcibly();
    }
  }

  /**
   * {@code --policy-churn}: once every node has enrolled, the simulator replaces the team's policy every
   * period (grants between the spread tags, direction and ports changing each time) and reports, for
   * each change, the version stored and how many nodes got new rules in their heartbeat answers.
   */
  /** {@code --certificates}: every simulated node sends a real CSR for its own key and adopts the certificate MeshCA issues. */
  @Test
  void withCertificatesEveryNodeGetsItsOwnCertificateThroughItsHeartbeats() throws Exception {
    Path out = dir.resolve("certs.out");
    Path err = dir.resolve("certs.err");
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:" + replica.coordinatorPort(),
        "--enroll-token", enrollToken, "--nodes", "12", "--interval", "1s", "--duration", "5s", "--name-prefix", "cert", "--tags", "tag:k",
        "--concurrency", "4", "--certificates");
    try {
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ends by itself");
      String stdout = Files.readString(out);
      assertEquals(0, p.exitValue(), stdout + Files.readString(err));
      String done = stdout.lines().filter(l -> l.startsWith("[sim] done")).findFirst().orElse("");
      assertTrue(done.contains("certificates adopted 12 (deferred 0, refused 0)"), stdout);
      // one certificate per node, each for a key of its own
      JsonObject list = cluster.http().get(replica.coordinatorPort(), "/v1/meshca/certificates?limit=100", cluster.admin()).bodyAsJsonObject();
      java.util.Set<String> nodes = new java.util.HashSet<>();
      java.util.Set<String> keys = new java.util.HashSet<>();
      for (Object o : list.getJsonArray("items")) {
        JsonObject c = (JsonObject) o;
        if (!"sim".equals(c.getString("team"))) continue;
        nodes.add(c.getString("node_id"));
        keys.add(c.getString("spki_sha256"));
      }
      assertEquals(12, nodes.size(), list.encode());
      assertEquals(nodes.size(), keys.size(), "one key per simulated node");
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void policyChurnReplacesThePolicyAndReportsHowManyNodesGotNewRules() throws Exception {
    Path out = dir.resolve("churn.out");
    Path err = dir.resolve("churn.err");
    String acl = Tokens.issue(replica, "sim", "lab", Surface.ADMIN).jwt();
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:" + replica.coordinatorPort(),
        "--enroll-token", enrollToken, "--nodes", "20", "--interval", "1s", "--duration", "23s", "--name-prefix", "churn", "--tags", "tag:c0",
        "--spread-tags", "4", "--concurrency", "8", "--policy-churn", "10s", "--policy-token", acl);
    try {
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ends by itself");
      String stdout = Files.readString(out);
      assertEquals(0, p.exitValue(), stdout + Files.readString(err));
      Matcher stored = Pattern.compile("\\[sim] policy change 1: version (\\d+) of sim/lab stored in \\d+ ms \\(2 grants\\)").matcher(stdout);
      assertTrue(stored.find(), stdout);
      long v1 = Long.parseLong(stored.group(1));
      // change 1 (tag:c1 -> tag:c0, tag:c3 -> tag:c2) gives the 10 nodes on tag:c0 and tag:c2 inbound rules
      Matcher reached = Pattern.compile("\\[sim] policy change 1 \\(version " + v1 + "\\): (\\d+) nodes got new rules, the last [\\d.]+ s after the PUT")
          .matcher(stdout);
      assertTrue(reached.find(), stdout);
      assertEquals(10, Integer.parseInt(reached.group(1)), stdout);
      // change 2 turns every grant around: all 20 nodes' rules change
      Matcher second = Pattern.compile("\\[sim] policy change 2 \\(version " + (v1 + 1) + "\\): (\\d+) nodes got new rules").matcher(stdout);
      assertTrue(second.find(), stdout);
      assertEquals(20, Integer.parseInt(second.group(1)), stdout);
      assertTrue(stdout.contains("errors: none"), stdout);
      JsonObject policy = cluster.http().get(replica.coordinatorPort(), "/v1/acl?team=sim&environment=lab", cluster.admin()).bodyAsJsonObject();
      assertEquals(v1 + 1, policy.getLong("version"), policy.encode());
      assertEquals("tag:c0", policy.getJsonArray("grants").getJsonObject(0).getJsonArray("src").getString(0), policy.encode());
    } finally {
      p.destroyForcibly();
    }
  }

  /**
   * {@code --watch}: every node holds a stream over HTTP/2 from two other loopback source addresses, from
   * its first heartbeat on (within one 10 s interval); the second policy change (at 20 s) changes every
   * node's rules, and they arrive over the streams: the summary counts them as {@code acl} answers with
   * their delay, which only stream answers have.
   */
  @Test
  void withWatchEveryNodeHoldsAStreamAndPolicyChangesArriveOverIt() throws Exception {
    Path out = dir.resolve("watch.out");
    Path err = dir.resolve("watch.err");
    String acl = Tokens.issue(replica, "sim", "lab", Surface.ADMIN).jwt();
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:" + replica.coordinatorPort(),
        "--enroll-token", enrollToken, "--nodes", "20", "--interval", "10s", "--duration", "25s", "--name-prefix", "watch", "--tags", "tag:w0",
        "--spread-tags", "2", "--concurrency", "8", "--policy-churn", "10s", "--policy-token", acl, "--watch", "--watch-streams-per-connection", "8",
        "--source-addresses", "127.0.0.2,127.0.0.3");
    try {
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ends by itself");
      String stdout = Files.readString(out);
      assertEquals(0, p.exitValue(), stdout + Files.readString(err));
      System.out.println(stdout);
      assertTrue(stdout.contains("[sim] watch streams: HTTP/2 (prior knowledge), at most 8 streams per connection, from 127.0.0.2,127.0.0.3"), stdout);
      // change 2 turns the grant around: all 20 nodes' rules change, within a second or so (a heartbeat would take up to 10 s)
      Matcher reached = Pattern.compile("\\[sim] policy change 2 \\(version \\d+\\): (\\d+) nodes got new rules, the last ([\\d.]+) s after the PUT")
          .matcher(stdout);
      assertTrue(reached.find(), stdout);
      assertEquals(20, Integer.parseInt(reached.group(1)), stdout);
      assertTrue(Double.parseDouble(reached.group(2)) < 5, stdout);
      Matcher done = Pattern.compile("\\[sim] done after .*, (\\d+) heartbeats sent, .*, streams open (\\d+), connects (\\d+) \\(opened (\\d+)\\), "
          + "refused (\\S+), ended (\\S+), messages (\\d+) \\(answer (\\d+) ping \\d+ close \\d+ other \\d+\\), first answers (\\d+), "
          + "early heartbeats \\d+, delay acl p50 (\\S+ ms) p90 \\S+ ms p99 \\S+ ms max \\S+ ms \\(n (\\d+)\\) peers .*").matcher(stdout);
      assertTrue(done.find(), stdout);
      assertTrue(Integer.parseInt(done.group(1)) >= 20, stdout);
      assertEquals(20, Integer.parseInt(done.group(2)), "20 streams open at the end: " + stdout);
      assertEquals(20, Integer.parseInt(done.group(4)), stdout);
      assertEquals("none", done.group(5), stdout);
      assertEquals(20, Integer.parseInt(done.group(9)), "each stream's first answer: " + stdout);
      assertTrue(Integer.parseInt(done.group(8)) >= 30, "first answers and the change's: " + stdout);
      assertTrue(Integer.parseInt(done.group(11)) >= 20, "change 2 reached all 20 nodes as acl answers with a delay: " + stdout);
      assertTrue(stdout.contains("errors: none"), stdout);
    } finally {
      p.destroyForcibly();
    }
  }

  /**
   * {@code --ingress-tag}: the nodes carrying it act as ingress nodes. A route created for that tag
   * reaches each of them over its watch stream well within the heartbeat interval, each reports the
   * version, and the coordinator shows every one of them {@code current} in its {@code ingress_sync};
   * the simulator's lines count the nodes on that version.
   */
  @Test
  void ingressNodesApplyARouteChangeOverTheirStreamsAndReportIt() throws Exception {
    Path out = dir.resolve("ingress.out");
    Path err = dir.resolve("ingress.err");
    String admin = Tokens.issue(replica, "sim", "lab", Surface.ADMIN).jwt();
    int port = replica.coordinatorPort();
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:" + port,
        "--enroll-token", enrollToken, "--nodes", "12", "--interval", "20s", "--duration", "35s", "--name-prefix", "ingsim", "--tags", "tag:ie0",
        "--spread-tags", "4", "--ingress-tag", "tag:ie0", "--concurrency", "8", "--watch");
    try (io.meshplane.testing.Http http = new io.meshplane.testing.Http()) {
      // 12 nodes over tag:ie0..tag:ie3: nodes 0, 4 and 8 carry tag:ie0
      // a simulated node's first heartbeat comes at a random moment of its first interval: wait for all three
      JsonArray edges = io.meshplane.testing.Await.until("the three ingress nodes enrolled and heard from", 45_000,
          () -> http.get(port, "/v1/nodes?tag=tag:ie0&name_prefix=ingsim&limit=50", admin).bodyAsJsonObject().getJsonArray("items"),
          items -> items.size() == 3 && items.stream().allMatch(o -> ((JsonObject) o).getValue("heartbeat") instanceof String));
      var web = http.send(io.vertx.core.http.HttpMethod.POST, port, "/v1/nodes", admin, new JsonObject().put("name", "ingsim-web")
          .put("public_key", io.meshplane.testing.Nodes.key()).put("team", "sim").put("environment", "lab").put("tags", new JsonArray().add("tag:web")));
      assertEquals(201, web.statusCode(), web.bodyAsString());
      String webId = web.bodyAsJsonObject().getJsonObject("node").getString("id");
      assertEquals(200, http.send(io.vertx.core.http.HttpMethod.PUT, port, "/v1/nodes/" + webId + "/services", admin,
          new JsonObject().put("services", new JsonArray().add("web:8080"))).statusCode());
      var acl = http.send(io.vertx.core.http.HttpMethod.PUT, port, "/v1/acl?team=sim&environment=lab", admin, new JsonObject().put("grants",
          new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:ie0")).put("dst", new JsonArray().add("tag:web"))
              .put("ports", new JsonArray().add("tcp/8080")))));
      assertEquals(200, acl.statusCode(), acl.bodyAsString());
      long posted = System.currentTimeMillis();
      var route = http.send(io.vertx.core.http.HttpMethod.POST, port, "/v1/ingress/routes", admin, new JsonObject().put("team", "sim")
          .put("environment", "lab").put("hostname", "sim.example.com").put("target", new JsonObject().put("node", webId).put("service", "web"))
          .put("exposure", "public").put("tls", "acme").put("ingress_tag", "tag:ie0"));
      assertEquals(201, route.statusCode(), route.bodyAsString());
      io.meshplane.testing.Await.until("every ingress node current", 25_000,
          () -> http.get(port, "/v1/nodes?tag=tag:ie0&name_prefix=ingsim&limit=50", admin).bodyAsJsonObject().getJsonArray("items"),
          items -> items.size() == 3 && items.stream().allMatch(o -> ((JsonObject) o).getValue("ingress_sync") instanceof JsonObject sync
              && "current".equals(sync.getString("state"))));
      long took = System.currentTimeMillis() - posted;
      // the stream brings the routes and the node beats at once to acknowledge them: seconds, not the 20 s interval
      assertTrue(took < 8_000, "over the streams, not at the next 20 s heartbeat: " + took + " ms");
      String version = http.get(port, "/v1/nodes/" + ((JsonObject) edges.getValue(0)).getString("id"), admin).bodyAsJsonObject()
          .getJsonObject("ingress_sync").getString("current");
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "ends by itself");
      String stdout = Files.readString(out);
      assertEquals(0, p.exitValue(), stdout + Files.readString(err));
      assertTrue(stdout.contains("ingress routes v" + version + "=3 (latest applied at "), stdout);
      assertTrue(stdout.contains("errors: none"), stdout);
    } finally {
      p.destroyForcibly();
    }
  }

  @Test
  void aCoordinatorThatIsNotOnThisMachineIsRefusedWithExitCode2() throws Exception {
    Path out = dir.resolve("remote.out");
    Path err = dir.resolve("remote.err");
    // 192.0.2.0/24 is TEST-NET-1: never reached, the refusal comes before any request
    Process p = ChildJvm.launch(dir, Map.of(), err, out, "simulate", "--coordinator", "http://127.0.0.1:9,http://192.0.2.10:8080",
        "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m");
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    String stderr = Files.readString(err);
    assertEquals(2, p.exitValue(), stderr);
    assertTrue(stderr.contains("refusing to simulate against http://192.0.2.10:8080") && stderr.contains("--allow-remote"), stderr);
    assertEquals("", Files.readString(out));
  }

  @Test
  void runsUnboundedInCountOrTimeAreRefused() {
    String url = "http://127.0.0.1:" + replica.coordinatorPort();
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "1000001", "--interval", "30s", "--duration", "1m"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "25h"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "500ms", "--duration", "1m"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "soon", "--duration", "1m"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m", "--tags", "tag:web",
        "--spread-tags", "10"));
    // --policy-churn needs its token and spread tags, within 10s..1h
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m", "--tags", "tag:t0",
        "--spread-tags", "4", "--policy-churn", "1m"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m", "--tags", "tag:t0",
        "--spread-tags", "4", "--policy-churn", "5s", "--policy-token", "x"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m", "--tags", "tag:web",
        "--policy-churn", "1m", "--policy-token", "x"));
    assertEquals(2, cli("--coordinator", url, "--enroll-token", "t", "--nodes", "10", "--interval", "30s", "--duration", "1m", "--policy-token", "x"));
    assertEquals(null, SimulateCommand.notLoopback("localhost"));
    assertEquals(null, SimulateCommand.notLoopback("::1"));
  }

  static int cli(String... args) {
    return new CommandLine(new SimulateCommand()).execute(args);
  }
}
