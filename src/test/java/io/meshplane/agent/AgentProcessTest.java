package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent as an operator runs it: {@code meshplane agent} in its own JVM against a real replica (real
 * PostgreSQL, real cluster member) whose interval is 1 s.
 */
@Timeout(120)
class AgentProcessTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"}]";
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String enrollToken;
  static String admin;
  final List<Process> started = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "relays", RELAYS));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "agents", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @AfterEach
  void killLeftovers() {
    for (Process p : started) p.destroyForcibly();
  }

  String replicaUrl() {
    return "http://127.0.0.1:" + replica.coordinatorPort();
  }

  Process agent(Path log, String... args) throws Exception {
    Process p = ChildJvm.launch(dir, Map.of(), log, null, Stream.concat(Stream.of("agent"), Stream.of(args)).toArray(String[]::new));
    started.add(p);
    return p;
  }

  @Test
  void enrollsThroughAFailoverKeepsItsSecretsPrivateServesItsProbesAndStopsWithExitZeroOnSigterm() throws Exception {
    int closed = FreePorts.next(); // nothing listens there
    Path state = dir.resolve("web-1-state");
    Path log = dir.resolve("agent.log");
    Process p = agent(log, "--coordinator", "http://127.0.0.1:" + closed + "," + replicaUrl(), "--enroll-token", enrollToken,
        "--name", "web-1", "--tags", "tag:web,tag:eu", "--state-dir", state.toString(), "--listen", "127.0.0.1:0", "--mesh-tls", "127.0.0.1:0");
    int port = awaitLog(log, p, "agent listening on 127\\.0\\.0\\.1:(\\d+)");
    int meshTls = awaitLog(log, p, "mesh TLS listening on 127\\.0\\.0\\.1:(\\d+)");
    awaitLog(log, p, "first heartbeat accepted by " + Pattern.quote(replicaUrl()) + "()");
    String out = Files.readString(log);
    assertTrue(out.contains("coordinator failover: http://127.0.0.1:" + closed + " failed (connect"), out);
    awaitLog(log, p, "enrolled via " + Pattern.quote(replicaUrl()) + "()");

    // the state dir: 0700, every file 0600
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));
    try (Stream<Path> files = Files.list(state)) {
      List<Path> all = files.toList();
      assertTrue(all.stream().map(f -> f.getFileName().toString()).toList().containsAll(List.of("node.json", "credential.json", "key.json")), all.toString());
      for (Path f : all) assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
    }
    String credential = new JsonObject(Files.readString(state.resolve("credential.json"))).getString("token");
    String publicKey = new JsonObject(Files.readString(state.resolve("key.json"))).getString("public_key");

    assertEquals(new JsonObject().put("status", "UP"), http.get(port, "/healthz").bodyAsJsonObject());
    awaitStatus(port, "/readyz", 200);
    HttpResponse<Buffer> info = http.get(port, "/info");
    assertEquals(200, info.statusCode());
    JsonObject i = info.bodyAsJsonObject();
    String id = i.getString("node_id");
    assertTrue(id.startsWith("nd_"), i.encode());
    assertEquals("web-1", i.getString("name"));
    assertTrue(i.getString("address").endsWith("/32"), i.encode());
    assertEquals(publicKey, i.getString("public_key"));
    assertEquals("fra1", i.getString("relay"), "the relay assigned at enrollment, adopted from the first answer");
    assertEquals(replicaUrl(), i.getString("coordinator"), "stays with the coordinator that answers");
    assertEquals(1, i.getInteger("interval_s"));
    assertEquals(0, i.getJsonObject("peers").getInteger("count"));
    assertEquals(new JsonObject().put("state", "on").put("host", "127.0.0.1").put("port", meshTls), i.getJsonObject("mesh_tls"));
    String metrics = http.get(port, "/metrics").bodyAsString();
    assertTrue(metrics.matches("(?s).*mesh_agent_heartbeats_total\\{outcome=\"ok\"} [1-9].*"), metrics);
    assertTrue(metrics.contains("mesh_agent_failovers_total 1"), metrics);
    assertTrue(metrics.contains("mesh_agent_ready 1"), metrics);
    assertTrue(metrics.contains("mesh_agent_mesh_tls_verdicts_total{side=\"listener\",verdict=\"revoked\"} 0"), metrics);
    promtool(metrics);
    for (String text : List.of(info.bodyAsString(), metrics, Files.readString(log))) {
      assertFalse(text.contains(credential), "the credential is never shown");
      assertFalse(text.contains(credential.substring(credential.lastIndexOf('.') + 1)), "not even its signature");
    }
    assertFalse(info.bodyAsString().contains("private"), info.bodyAsString());

    JsonObject node = http.get(replica.coordinatorPort(), "/v1/nodes/" + id, admin).bodyAsJsonObject();
    assertEquals("online", node.getString("status"), node.encode());
    assertEquals(publicKey, node.getString("public_key"));
    assertEquals(AgentSession.AGENT_VERSION, node.getJsonObject("telemetry").getString("agent_version"));

    long t0 = System.nanoTime();
    p.destroy(); // SIGTERM
    assertTrue(p.waitFor(10, TimeUnit.SECONDS), "stops within 10 s");
    assertEquals(0, p.exitValue(), Files.readString(log));
    System.out.println("agent: SIGTERM to exit " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    assertTrue(Files.readString(log).contains("agent stopped"), Files.readString(log));
    assertFalse(Files.readString(log).contains("Exception"), Files.readString(log));
  }

  @Test
  void aRestartReusesTheEnrollmentAndARevokedCredentialMakesItNotReady() throws Exception {
    Path state = dir.resolve("db-1-state");
    Path log1 = dir.resolve("first.log");
    Process first = agent(log1, "--coordinator", replicaUrl(), "--enroll-token", enrollToken, "--name", "db-1", "--state-dir", state.toString(),
        "--listen", "127.0.0.1:0");
    int port = awaitLog(log1, first, "agent listening on 127\\.0\\.0\\.1:(\\d+)");
    awaitLog(log1, first, "first heartbeat accepted()");
    String id = http.get(port, "/info").bodyAsJsonObject().getString("node_id");
    first.destroy();
    assertTrue(first.waitFor(10, TimeUnit.SECONDS));
    assertEquals(0, first.exitValue());

    // no enrollment token this time: the state dir holds the credential
    Path log2 = dir.resolve("second.log");
    Process second = agent(log2, "--coordinator", replicaUrl(), "--name", "db-1", "--state-dir", state.toString(), "--listen", "127.0.0.1:0");
    int port2 = awaitLog(log2, second, "agent listening on 127\\.0\\.0\\.1:(\\d+)");
    awaitLog(log2, second, "using the enrollment kept in ()");
    awaitLog(log2, second, "first heartbeat accepted()");
    assertEquals(id, http.get(port2, "/info").bodyAsJsonObject().getString("node_id"));
    assertFalse(Files.readString(log2).contains("enrolled via"), Files.readString(log2));
    JsonObject list = http.get(replica.coordinatorPort(), "/v1/nodes?name_prefix=db-1", admin).bodyAsJsonObject();
    assertEquals(1, list.getJsonArray("items").size(), "one node, enrolled once: " + list.encode());
    awaitStatus(port2, "/readyz", 200);

    // the node deleted: its credential is rejected from then on; the agent logs it, is not ready, and keeps trying slowly
    assertEquals(204, http.send(HttpMethod.DELETE, replica.coordinatorPort(), "/v1/nodes/" + id, admin, null).statusCode());
    awaitLog(log2, second, "heartbeat rejected by .*: (401)");
    HttpResponse<Buffer> ready = awaitStatus(port2, "/readyz", 503);
    assertTrue(ready.bodyAsJsonObject().getString("reason").contains("rejects this node's heartbeats: 401"), ready.bodyAsString());
    String metrics = http.get(port2, "/metrics").bodyAsString();
    assertTrue(metrics.matches("(?s).*mesh_agent_heartbeats_total\\{outcome=\"rejected\"} [1-9].*"), metrics);
    assertTrue(second.isAlive(), "it keeps running");
    second.destroy();
    assertTrue(second.waitFor(10, TimeUnit.SECONDS));
    assertEquals(0, second.exitValue());
  }

  @Test
  void aRefusedEnrollmentStopsTheAgentWithExitCode3AndBadFlagsWithExitCode2() throws Exception {
    Path log = dir.resolve("refused.log");
    Process p = agent(log, "--coordinator", replicaUrl(), "--enroll-token", "not.a.token", "--name", "x-1", "--state-dir",
        dir.resolve("x").toString(), "--listen", "127.0.0.1:0");
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(3, p.exitValue(), Files.readString(log));
    assertTrue(Files.readString(log).contains("enrollment refused by " + replicaUrl() + ": 401"), Files.readString(log));

    Path bad = dir.resolve("bad.log");
    Process q = agent(bad, "--coordinator", "ftp://127.0.0.1:1", "--name", "Not_A_Label");
    assertTrue(q.waitFor(30, TimeUnit.SECONDS));
    assertEquals(2, q.exitValue(), Files.readString(bad));
    assertTrue(Files.readString(bad).contains("must start with http:// or https://"), Files.readString(bad));
    assertEquals(2, new picocli.CommandLine(new AgentCommand()).execute("--coordinator", replicaUrl(), "--name", "y-1", "--enroll-token", "t",
        "--state-dir", dir.resolve("empty").toString(), "--mesh-tls", "127.0.0.1"), "--mesh-tls needs HOST:PORT");

    // checked before anything starts: a node that is not enrolled needs the enrollment token
    assertEquals(2, new picocli.CommandLine(new AgentCommand()).execute("--coordinator", replicaUrl(), "--name", "y-1", "--state-dir",
        dir.resolve("empty").toString(), "--listen", "127.0.0.1:0"));
  }

  HttpResponse<Buffer> awaitStatus(int port, String path, int status) {
    return Await.until(path + " answers " + status, 20_000, () -> http.get(port, path), r -> r.statusCode() == status);
  }

  static int awaitLog(Path log, Process p, String regex) {
    String found = Await.inLog(log, regex, p, 30_000);
    return found.isEmpty() ? 0 : Integer.parseInt(found);
  }

  static void promtool(String metrics) throws Exception {
    Process p;
    try {
      p = new ProcessBuilder("promtool", "check", "metrics").redirectErrorStream(true).start();
    } catch (java.io.IOException e) {
      throw new AssertionError("promtool is needed (Debian package prometheus; .ci/run installs it)", e);
    }
    p.getOutputStream().write(metrics.getBytes(StandardCharsets.UTF_8));
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals("", out.trim(), "promtool findings");
    assertEquals(0, p.exitValue(), out);
  }
}
