package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.FreePorts;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two reference agents against a real replica, each with its mesh TLS listener: they trust each other
 * (mutual TLS, each sees the other's SPIFFE id), refuse a certificate of another CA, and refuse a
 * revoked certificate once they have applied the revocation their heartbeats bring, both ways: the
 * dialer's verdict ({@code GET /peers/{id}/tls}) and the listener's handshake. openssl (a TLS client and
 * a TLS server no one here wrote) checks the listener and the dialer from outside.
 */
@Timeout(240)
class MeshTlsPeersTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  final List<NodeAgent> agents = new ArrayList<>();
  final List<Process> processes = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "meshca.secret", "a test secret for MeshCA, at least thirty-two bytes"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "peers", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @AfterEach
  void closeAll() {
    processes.forEach(Process::destroyForcibly);
    agents.forEach(NodeAgent::close);
  }

  /** A live agent with its mesh TLS listener on a free port. */
  NodeAgent agent(String name) {
    return agent(name, "http://127.0.0.1:" + replica.coordinatorPort(), enrollToken);
  }

  /** An agent restarted from {@code name}'s state dir whose coordinator is gone: it keeps presenting the certificate it holds. */
  NodeAgent frozen(String name) {
    return agent(name, "http://127.0.0.1:" + FreePorts.next(), null);
  }

  NodeAgent agent(String name, String coordinator, String token) {
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of(coordinator)), token, name, List.of("tag:web"), dir.resolve(name),
        "127.0.0.1", 0, Backoff.standard()).withMeshTls("127.0.0.1", 0));
    agents.add(a);
    assertTrue(a.meshTlsPort() > 0);
    return a;
  }

  JsonObject info(NodeAgent a) {
    return http.get(a.listenPort(), "/info").bodyAsJsonObject();
  }

  JsonObject valid(NodeAgent a) {
    return Await.until("a valid certificate", 30_000, () -> info(a).getJsonObject("certificate"), c -> c != null && "valid".equals(c.getString("verdict")));
  }

  static String id(NodeAgent a) {
    return a.verticle().session().nodeId();
  }

  /** The verdict of {@code from} on the peer {@code to} reached at {@code port}. */
  JsonObject dial(NodeAgent from, String nodeId, int port) {
    HttpResponse<Buffer> r = http.get(from.listenPort(), "/peers/" + nodeId + "/tls?target=127.0.0.1:" + port);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  long revoke(String serial) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/meshca/certificates/" + serial + "/revoke", admin,
        new JsonObject().put("reason", "keyCompromise"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getLong("revocation_version");
  }

  void awaitRevocations(NodeAgent a, long version) {
    Await.until("the revocation list at version " + version, 30_000, () -> info(a).getJsonObject("certificate").getLong("revocations") >= version);
  }

  /** Writes {@code name}'s certificate, chain and private key (PEM) as {@code prefix.pem}, {@code prefix-chain.pem}, {@code prefix.key}. */
  Path export(NodeAgent a, String name, String prefix) throws Exception {
    Path work = Files.createDirectories(dir.resolve("openssl"));
    String serial = info(a).getJsonObject("certificate").getString("serial");
    // the state file is written before the next heartbeat: wait until it holds the certificate /info shows
    JsonObject pki = Await.until("the certificate saved", 10_000, () -> saved(dir.resolve(name).resolve(StateDir.STATE)),
        j -> j != null && j.getValue("certificate") instanceof String c && AgentPki.certificates(c).size() == 1
            && serial.equals(AgentPki.hex(AgentPki.certificates(c).get(0).getSerialNumber())));
    Files.writeString(work.resolve(prefix + ".pem"), pki.getString("certificate"));
    Files.writeString(work.resolve(prefix + "-chain.pem"), pki.getString("chain"));
    Files.writeString(work.resolve(prefix + ".key"), "-----BEGIN PRIVATE KEY-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(Base64.getDecoder().decode(pki.getString("private_key"))) + "\n-----END PRIVATE KEY-----\n");
    Files.writeString(work.resolve("bundle.pem"), http.get(replica.coordinatorPort(), "/v1/meshca/bundle", admin).bodyAsString());
    return work;
  }

  private static JsonObject saved(Path state) {
    try {
      return new JsonObject(Files.readString(state)).getJsonObject("pki");
    } catch (Exception e) {
      return null;
    }
  }

  static String openssl(Path work, String stdin, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("openssl"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().write(stdin.getBytes());
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), String.join(" ", cmd));
    return out;
  }

  /** openssl s_client with {@code prefix}'s certificate against a listener, asking GET /identity; its whole output. */
  static String sClient(Path work, int port, String prefix) throws Exception {
    List<String> args = new ArrayList<>(List.of("s_client", "-connect", "127.0.0.1:" + port, "-CAfile", "bundle.pem",
        "-cert", prefix + ".pem", "-key", prefix + ".key", "-ign_eof"));
    if (Files.exists(work.resolve(prefix + "-chain.pem"))) args.addAll(List.of("-cert_chain", prefix + "-chain.pem"));
    return openssl(work, "GET /identity HTTP/1.1\r\nHost: mesh\r\nConnection: close\r\n\r\n", args.toArray(new String[0]));
  }

  /** A CA no one in the mesh trusts, and a certificate it signed claiming {@code spiffeId}: {@code other.pem}, {@code other.key}. */
  static void otherCa(Path work, String spiffeId) throws Exception {
    openssl(work, "", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.pem",
        "-subj", "/CN=another CA", "-days", "2");
    openssl(work, "", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "other.key", "-out", "other.csr",
        "-subj", "/CN=intruder");
    Files.writeString(work.resolve("other.ext"), "subjectAltName=URI:" + spiffeId + "\nextendedKeyUsage=clientAuth,serverAuth\n"
        + "keyUsage=critical,digitalSignature\n");
    openssl(work, "", "x509", "-req", "-in", "other.csr", "-CA", "other-ca.pem", "-CAkey", "other-ca.key", "-CAcreateserial", "-out", "other.pem",
        "-days", "1", "-extfile", "other.ext");
    assertTrue(Files.readString(work.resolve("other.pem")).contains("BEGIN CERTIFICATE"));
  }

  /** openssl s_server presenting {@code prefix}'s certificate on a free port; returns the port once it accepts. */
  int sServer(Path work, String prefix) throws Exception {
    int port = FreePorts.next();
    Process p = new ProcessBuilder("openssl", "s_server", "-accept", "127.0.0.1:" + port, "-cert", prefix + ".pem", "-key", prefix + ".key", "-www")
        .directory(work.toFile()).redirectErrorStream(true).start();
    processes.add(p);
    StringBuffer out = new StringBuffer();
    Thread reader = new Thread(() -> {
      try (var in = p.getInputStream()) {
        byte[] b = new byte[4096];
        for (int n; (n = in.read(b)) > 0;) out.append(new String(b, 0, n));
      } catch (java.io.IOException e) {
        // the process ended
      }
    });
    reader.setDaemon(true);
    reader.start();
    Await.until("openssl s_server accepting", 10_000, () -> out.toString().contains("ACCEPT"));
    return port;
  }

  static boolean answered(String sClientOutput, String spiffeId) {
    return sClientOutput.contains("\"peer\":{\"verdict\":\"trusted\"") && sClientOutput.contains("\"spiffe_id\":\"" + spiffeId + "\"");
  }

  @Test
  void twoAgentsTrustEachOtherAndRefuseAnotherCasCertificate() throws Exception {
    NodeAgent a = agent("tls-a");
    NodeAgent b = agent("tls-b");
    valid(a);
    valid(b);
    String aId = id(a);
    String bId = id(b);

    // A dials B and B dials A: trusted, each seeing the other's SPIFFE id (mutual TLS)
    JsonObject ab = dial(a, bId, b.meshTlsPort());
    assertEquals("trusted", ab.getString("verdict"), ab.encode());
    assertTrue(ab.getString("spiffe_id").startsWith("spiffe://") && ab.getString("spiffe_id").endsWith("/node/" + bId), ab.encode());
    assertTrue(ab.getString("peer_saw").endsWith("/node/" + aId), ab.encode());
    assertEquals(ab.getString("self"), ab.getString("peer_saw"));
    assertEquals(info(b).getJsonObject("certificate").getString("serial"), ab.getString("serial"));
    JsonObject ba = dial(b, aId, a.meshTlsPort());
    assertEquals("trusted", ba.getString("verdict"), ba.encode());
    assertEquals(ab.getString("self"), ba.getString("spiffe_id"));
    assertEquals(ab.getString("spiffe_id"), ba.getString("peer_saw"));
    // the dialer checks whom it reached: B's listener is not node A
    JsonObject wrong = dial(a, aId, b.meshTlsPort());
    assertEquals("untrusted", wrong.getString("verdict"), wrong.encode());
    assertTrue(wrong.getString("reason").contains("not node " + aId), wrong.encode());

    // openssl s_client with A's certificate and key: B's chain verifies under the bundle, and B answers with A's SPIFFE id
    Path work = export(a, "tls-a", "a");
    String out = sClient(work, b.meshTlsPort(), "a");
    assertTrue(out.contains("Verify return code: 0 (ok)"), out);
    assertTrue(answered(out, ab.getString("self")), out);

    // a certificate of another CA claiming to be node A: B's listener refuses the handshake, A's dialer calls it untrusted
    otherCa(work, ab.getString("self"));
    String intruder = sClient(work, b.meshTlsPort(), "other");
    assertFalse(intruder.contains("\"peer\""), intruder);
    assertTrue(Metrics.value(http, b.listenPort(), "mesh_agent_mesh_tls_verdicts_total{side=\"listener\",verdict=\"untrusted\"}") >= 1);
    JsonObject foreign = dial(a, aId, sServer(work, "other"));
    assertEquals("untrusted", foreign.getString("verdict"), foreign.encode());
    assertTrue(foreign.getString("reason").contains("does not chain to the trust bundle"), foreign.encode());

    // nothing listens: unreachable, with the reason; hostile inputs: 400 naming the field
    JsonObject gone = dial(a, bId, FreePorts.next());
    assertEquals("unreachable", gone.getString("verdict"), gone.encode());
    assertTrue(gone.getString("reason") != null && !gone.getString("reason").isEmpty(), gone.encode());
    HttpResponse<Buffer> badId = http.get(a.listenPort(), "/peers/not-a-node/tls?target=127.0.0.1:1");
    assertEquals(400, badId.statusCode());
    assertEquals("id", badId.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    for (String bad : List.of("127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", ":80", "h%20st:80", "a b:1")) {
      HttpResponse<Buffer> r = http.get(a.listenPort(), "/peers/" + bId + "/tls?target=" + java.net.URLEncoder.encode(bad, java.nio.charset.StandardCharsets.UTF_8));
      assertEquals(400, r.statusCode(), bad + " -> " + r.bodyAsString());
      assertEquals("target", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), bad);
    }
  }

  @Test
  void aRevokedCertificateIsRefusedBothWaysOnceTheRevocationIsApplied() throws Exception {
    NodeAgent a = agent("rev-a");
    NodeAgent b = agent("rev-b");
    JsonObject aCert = valid(a);
    JsonObject bCert = valid(b);
    String aId = id(a);
    String bId = id(b);
    assertEquals("trusted", dial(a, bId, b.meshTlsPort()).getString("verdict"));
    Path work = export(a, "rev-a", "a");
    String aSpiffe = dial(b, aId, a.meshTlsPort()).getString("spiffe_id");
    assertTrue(answered(sClient(work, b.meshTlsPort(), "a"), aSpiffe), "B takes A's certificate before the revocation");

    // A's certificate revoked (A renews at once with a new key); once B applied the revocation, B's listener refuses A's old certificate
    long v1 = revoke(aCert.getString("serial"));
    awaitRevocations(b, v1);
    String refused = sClient(work, b.meshTlsPort(), "a");
    assertFalse(answered(refused, aSpiffe), refused);
    assertTrue(Metrics.value(http, b.listenPort(), "mesh_agent_mesh_tls_verdicts_total{side=\"listener\",verdict=\"revoked\"}") >= 1);
    // A's renewed certificate: presented by A's listener and taken by B's, without a restart of either
    JsonObject renewed = Await.until("A's new certificate", 30_000, () -> info(a).getJsonObject("certificate"),
        c -> "valid".equals(c.getString("verdict")) && !aCert.getString("serial").equals(c.getString("serial")));
    JsonObject ba = dial(b, aId, a.meshTlsPort());
    assertEquals("trusted", ba.getString("verdict"), ba.encode());
    assertEquals(renewed.getString("serial"), ba.getString("serial"));
    JsonObject ab = dial(a, bId, b.meshTlsPort());
    assertEquals("trusted", ab.getString("verdict"), ab.encode());
    assertEquals(aSpiffe, ab.getString("peer_saw"), ab.encode());
    assertNull(ab.getValue("refused_by_peer"), ab.encode());

    // B's certificate revoked while B is away (a live B would renew at its next heartbeat and present a new one); A applies the
    // revocation; B comes back without its coordinator, still presenting the revoked certificate
    b.close();
    long v2 = revoke(bCert.getString("serial"));
    awaitRevocations(a, v2);
    NodeAgent b2 = frozen("rev-b");
    assertEquals(bCert.getString("serial"), info(b2).getJsonObject("certificate").getString("serial"));
    JsonObject revoked = dial(a, bId, b2.meshTlsPort());
    assertEquals("revoked", revoked.getString("verdict"), revoked.encode());
    assertTrue(revoked.getString("reason").contains(bCert.getString("serial")), revoked.encode());
    assertTrue(revoked.getString("spiffe_id").endsWith("/node/" + bId), revoked.encode());
    assertNull(revoked.getValue("peer_saw"), revoked.encode());
    // and the other way: B (which has not heard of its own revocation) still trusts A, but A refused B's certificate first
    JsonObject fromB = dial(b2, aId, a.meshTlsPort());
    assertEquals("trusted", fromB.getString("verdict"), fromB.encode());
    assertTrue(fromB.getString("refused_by_peer") != null, fromB.encode());
    assertNull(fromB.getValue("peer_saw"), fromB.encode());
    assertNotEquals(0, Metrics.value(http, a.listenPort(), "mesh_agent_mesh_tls_verdicts_total{side=\"dialer\",verdict=\"revoked\"}"));
  }

  @Test
  void theDialRouteAnswersLoopbackCallersOnly() throws Exception {
    java.net.InetAddress other = null;
    for (var nic : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
      if (!nic.isUp() || nic.isLoopback()) continue;
      for (var a : java.util.Collections.list(nic.getInetAddresses())) {
        if (a instanceof java.net.Inet4Address) other = a;
      }
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(other != null, "this host has no address besides loopback");
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())), enrollToken,
        "wide-1", List.of("tag:web"), dir.resolve("wide-1"), "0.0.0.0", 0, Backoff.standard()));
    agents.add(a);
    String path = "/peers/nd_01m8h8am533yn4w5g7dv6r9g5z/tls?target=127.0.0.1:" + FreePorts.next();
    java.net.http.HttpResponse<String> far = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + other.getHostAddress() + ":" + a.listenPort() + path)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertEquals(403, far.statusCode(), far.body());
    assertEquals(200, http.get(a.listenPort(), "/info").statusCode(), "the rest of the listener answers");
    assertEquals("unreachable", http.get(a.listenPort(), path).bodyAsJsonObject().getString("verdict"), "a loopback caller is answered");
  }
}
