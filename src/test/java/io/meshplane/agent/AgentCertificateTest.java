package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * MeshCA through the heartbeat, as the reference agent lives it against a real replica: the agent makes
 * its own key and sends a CSR in a heartbeat, adopts the certificate only after verifying its chain under
 * the bundle the same answers carry, keeps key and certificate in its 0600 state file, and openssl
 * verifies the certificate against the served bundle. A revocation reaches the agent in its next answer
 * (its verdict turns {@code revoked}) and the agent renews with a new key at once, with its agent token
 * alone. Hostile {@code pki} blocks are refused with 400 naming the field, and nothing is stored.
 */
@Timeout(120)
class AgentCertificateTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  final List<NodeAgent> agents = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "meshca.secret", "a test secret for MeshCA, at least thirty-two bytes"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "certs", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @AfterEach
  void closeAgents() {
    agents.forEach(NodeAgent::close);
  }

  NodeAgent agent(String name) {
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())), enrollToken,
        name, List.of("tag:web"), dir.resolve(name), "127.0.0.1", 0, Backoff.standard()));
    agents.add(a);
    return a;
  }

  JsonObject certificate(NodeAgent a) {
    return http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("certificate");
  }

  JsonObject awaitCertificate(NodeAgent a, String what, Predicate<JsonObject> condition) {
    return Await.until(what, 30_000, () -> certificate(a), c -> c != null && condition.test(c));
  }

  static String run(Path dir, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("openssl"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
    return out;
  }

  @Test
  void anAgentGetsItsCertificateThroughItsHeartbeatsAndRenewsAtOnceWhenItIsRevoked() throws Exception {
    NodeAgent a = agent("cert-1");
    JsonObject c = awaitCertificate(a, "a valid certificate", j -> "valid".equals(j.getString("verdict")));
    String nodeId = a.verticle().session().nodeId();
    assertTrue(c.getJsonArray("subject_alt_names").encode().contains("spiffe://"), c.encode());
    assertTrue(c.getJsonArray("subject_alt_names").encode().contains("/node/" + nodeId), c.encode());
    // held, not asked for again: three more heartbeats (1 s apart) keep the same certificate
    String ok = "mesh_agent_heartbeats_total{outcome=\"ok\"}";
    double beats = io.meshplane.testing.Metrics.value(http, a.listenPort(), ok);
    Await.until("three more heartbeats", 10_000, () -> io.meshplane.testing.Metrics.value(http, a.listenPort(), ok) >= beats + 3);
    assertEquals(c.getString("serial"), certificate(a).getString("serial"), "no CSR while the certificate is current");
    String metrics = http.get(a.listenPort(), "/metrics").bodyAsString();
    assertTrue(metrics.contains("mesh_agent_certificate_expiry_seconds "), metrics);

    // key and certificate in the state dir, 0600; openssl verifies the certificate under the served bundle
    Path state = dir.resolve("cert-1").resolve(StateDir.STATE);
    Await.until("the certificate saved", 10_000, () -> saved(state, c));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));
    JsonObject pki = new JsonObject(Files.readString(state)).getJsonObject("pki");
    assertTrue(pki.getString("private_key").length() > 40, "the private key is kept (0600)");
    Path work = Files.createDirectories(dir.resolve("openssl"));
    HttpResponse<Buffer> bundle = http.get(replica.coordinatorPort(), "/v1/meshca/bundle", admin);
    assertEquals(200, bundle.statusCode());
    Files.writeString(work.resolve("bundle.pem"), bundle.bodyAsString());
    Files.writeString(work.resolve("chain.pem"), pki.getString("chain"));
    Files.writeString(work.resolve("node.pem"), pki.getString("certificate"));
    assertTrue(run(work, "verify", "-CAfile", "bundle.pem", "-untrusted", "chain.pem", "node.pem").contains("node.pem: OK"));

    // revoked by an operator: the next answer carries the revocation, the agent sends a CSR for a new key and adopts a new certificate
    HttpResponse<Buffer> revoke = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/meshca/certificates/" + c.getString("serial") + "/revoke",
        admin, new JsonObject().put("reason", "keyCompromise"));
    assertEquals(200, revoke.statusCode(), revoke.bodyAsString());
    JsonObject renewed = awaitCertificate(a, "a new valid certificate", j -> "valid".equals(j.getString("verdict"))
        && !c.getString("serial").equals(j.getString("serial")));
    assertTrue(renewed.getLong("revocations") > 0, renewed.encode());
    Await.until("the new certificate saved", 10_000, () -> saved(state, c)
        && !pki.getString("certificate").equals(new JsonObject(read(state)).getJsonObject("pki").getString("certificate")));
    assertNotEquals(pki.getString("public_key"), new JsonObject(Files.readString(state)).getJsonObject("pki").getString("public_key"),
        "a revoked certificate's key is not used again");
  }

  @Test
  void aCertificateAdoptedJustBeforeAStopIsHeldAgainAfterTheRestart() {
    // the state is saved before each heartbeat; a stop between an adoption and the next heartbeat (a second here, 30 s
    // and more in production) must save it too, or the restarted agent asks again and the coordinator holds it back
    NodeAgent a = agent("cert-stop");
    JsonObject c = awaitCertificate(a, "a valid certificate", j -> "valid".equals(j.getString("verdict")));
    a.close();
    NodeAgent again = agent("cert-stop");
    JsonObject held = certificate(again);
    assertTrue(held != null && c.getString("serial").equals(held.getString("serial")),
        "the restarted agent holds the certificate it had before any heartbeat: " + held);
  }

  @Test
  void reissuingANodesCertificateIsAnOperationVerifiedByTheNewSerialItsHeartbeatReports() {
    NodeAgent a = agent("cert-reissue");
    JsonObject c = awaitCertificate(a, "a valid certificate", j -> "valid".equals(j.getString("verdict")));
    String nodeId = a.verticle().session().nodeId();
    Await.until("the serial in the node record", 10_000, () -> http.get(replica.coordinatorPort(), "/v1/nodes/" + nodeId, admin).bodyAsJsonObject()
        .getJsonObject("pki_sync"), s -> c.getString("serial").equals(s.getString("serial")));
    String monitoring = Tokens.issue(replica, "certs", "prod", Surface.MONITORING).jwt();
    assertEquals(403, http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + nodeId + "/certificate/reissue", monitoring,
        new JsonObject()).statusCode());
    // asked within a minute of the last certificate: the operator's request is not held back by the one-a-minute rule
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + nodeId + "/certificate/reissue", admin,
        new JsonObject());
    assertEquals(202, r.statusCode(), r.bodyAsString());
    JsonObject op = r.bodyAsJsonObject();
    assertEquals("reissue_certificate", op.getString("kind"), op.encode());
    assertEquals(c.getString("serial"), op.getJsonObject("target").getString("old_serial"), op.encode());
    JsonObject done = Await.until("the operation succeeded", 30_000, () -> http.get(replica.coordinatorPort(), "/v1/operations/"
        + op.getString("id"), admin).bodyAsJsonObject(), o -> o.getValue("completed_at") != null);
    assertEquals("succeeded", done.getString("status"), done.encode());
    String fresh = done.getJsonObject("result").getString("new_serial");
    assertNotEquals(c.getString("serial"), fresh, done.encode());
    assertEquals(fresh, certificate(a).getString("serial"), "the agent holds the certificate the operation saw");
    // a node whose agent holds no certificate (no MeshCA in it): 409
    io.meshplane.testing.Nodes.Enrolled bare = io.meshplane.testing.Nodes.enroll(http, replica.coordinatorPort(), admin, "cert-bare", "certs", "prod");
    assertEquals(409, http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + bare.id() + "/certificate/reissue", admin,
        new JsonObject()).statusCode());
  }

  @Test
  void revokingATokenReissuesNoCertificateAndReEnrollsNoNode() throws Exception {
    io.meshplane.auth.TokenIssuer.Issued enroll = Tokens.issue(replica, "certs", "prod", Surface.ENROLLMENT);
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())),
        enroll.jwt(), "cert-3", List.of("tag:web"), dir.resolve("cert-3"), "127.0.0.1", 0, Backoff.standard()));
    agents.add(a);
    JsonObject c = awaitCertificate(a, "a valid certificate", j -> "valid".equals(j.getString("verdict")));
    String nodeId = a.verticle().session().nodeId();
    HttpResponse<Buffer> revoked = http.send(HttpMethod.DELETE, replica.coordinatorPort(), "/v1/auth/tokens/" + enroll.record().id(), admin, null);
    assertTrue(revoked.statusCode() == 200 || revoked.statusCode() == 204, revoked.bodyAsString());
    // certificates follow nodes and keys, tokens follow callers: the node keeps its certificate, gets no new one, is not enrolled again
    String ok = "mesh_agent_heartbeats_total{outcome=\"ok\"}";
    double beats = io.meshplane.testing.Metrics.value(http, a.listenPort(), ok);
    Await.until("three more heartbeats", 10_000, () -> io.meshplane.testing.Metrics.value(http, a.listenPort(), ok) >= beats + 3);
    assertEquals(c.getString("serial"), certificate(a).getString("serial"));
    assertEquals(nodeId, a.verticle().session().nodeId());
    JsonObject list = http.get(replica.coordinatorPort(), "/v1/meshca/certificates?node=" + nodeId, admin).bodyAsJsonObject();
    assertEquals(1, list.getJsonArray("items").size(), list.encode());
    assertEquals("valid", list.getJsonArray("items").getJsonObject(0).getString("state"), list.encode());
    assertEquals(200, http.get(replica.coordinatorPort(), "/v1/nodes/" + nodeId, admin).statusCode());
  }

  @Test
  void anExpiredCertificateRenewsWithinTheGraceAndNotBeyondIt() throws Exception {
    io.meshplane.testing.Nodes.Enrolled n = io.meshplane.testing.Nodes.enroll(http, replica.coordinatorPort(), admin, "grace-1", "certs", "prod");
    String path = "/v1/nodes/" + n.id() + "/heartbeat";
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    java.security.KeyPair pair = g.generateKeyPair();
    String csr = java.util.Base64.getEncoder().encodeToString(new org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder(
        new javax.security.auth.x500.X500Principal("CN=x"), pair.getPublic())
        .build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())).getEncoded());
    JsonObject body = new JsonObject().put("pki", new JsonObject().put("csr", csr));
    JsonObject first = http.send(HttpMethod.POST, replica.coordinatorPort(), path, n.token(), body).bodyAsJsonObject().getJsonObject("pki");
    String serial = first.getJsonObject("certificate").getString("serial");

    // a second CSR at once, for the same key, while the certificate stands: deferred (one node cannot spend the cluster's budget)
    JsonObject again = http.send(HttpMethod.POST, replica.coordinatorPort(), path, n.token(), body).bodyAsJsonObject().getJsonObject("pki");
    assertTrue(again.getJsonObject("deferred").getInteger("retry_after_s") >= 1, again.encode());
    assertTrue(!again.containsKey("certificate"), again.encode());

    // expired a day ago (a laptop asleep, a control-plane outage): renewed with the agent token alone
    expire("serial", serial, "1 day");
    JsonObject renewed = http.send(HttpMethod.POST, replica.coordinatorPort(), path, n.token(), body).bodyAsJsonObject().getJsonObject("pki");
    assertTrue(renewed.containsKey("certificate"), renewed.encode());
    // every certificate of the node expired eight days ago, beyond the 7-day grace: no certificate, the answer says why
    expire("node_id", n.id(), "8 days");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), path, n.token(), body);
    assertEquals(200, r.statusCode(), "the heartbeat itself is taken: " + r.bodyAsString());
    JsonObject refused = r.bodyAsJsonObject().getJsonObject("pki");
    assertEquals("renewal_grace_passed", refused.getJsonObject("refused").getString("code"), refused.encode());
    assertTrue(!refused.containsKey("certificate"));
  }

  /** Moves the expiry of the certificates whose {@code column} is {@code value} into the past. */
  static void expire(String column, String value, String ago) throws Exception {
    try (java.sql.Connection c = cluster.db().connect(); java.sql.Statement st = c.createStatement()) {
      st.executeUpdate("UPDATE meshca_certificates SET not_after = now() - interval '" + ago + "', not_before = now() - interval '30 days'"
          + " WHERE " + column + " = '" + value + "'");
    }
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (java.io.IOException e) {
      return "";
    }
  }

  private static boolean saved(Path state, JsonObject c) {
    try {
      JsonObject pki = new JsonObject(Files.readString(state)).getJsonObject("pki");
      return pki != null && pki.getString("certificate", "").contains("BEGIN CERTIFICATE");
    } catch (Exception e) {
      return false;
    }
  }

  @Test
  void hostilePkiBlocksAreRefusedNamingTheFieldAndNothingIsStored() throws Exception {
    NodeAgent a = agent("cert-2");
    awaitCertificate(a, "a valid certificate", j -> "valid".equals(j.getString("verdict")));
    String nodeId = a.verticle().session().nodeId();
    String token = a.verticle().session().authorization().substring("Bearer ".length());
    a.close();
    String path = "/v1/nodes/" + nodeId + "/heartbeat";
    for (var bad : List.of(
        Map.entry(new JsonObject().put("csr", "not base64 and not PEM"), "pki.csr"),
        Map.entry(new JsonObject().put("csr", "MIIB"), "pki.csr"),
        Map.entry(new JsonObject().put("csr", "A".repeat(9000)), "pki.csr"),
        Map.entry(new JsonObject().put("serial", "XYZ"), "pki.serial"),
        Map.entry(new JsonObject().put("not_after", "yesterday"), "pki.not_after"),
        Map.entry(new JsonObject().put("revocations", -1), "pki.revocations"),
        Map.entry(new JsonObject().put("bundle", "<script>"), "pki.bundle"))) {
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), path, token,
          new JsonObject().put("endpoints", new io.vertx.core.json.JsonArray().add("198.51.100.77:41641")).put("pki", bad.getKey()));
      assertEquals(400, r.statusCode(), bad.getKey().encode() + " -> " + r.bodyAsString());
      assertTrue(r.bodyAsString().contains("\"" + bad.getValue() + "\""), r.bodyAsString());
    }
    // nothing of those heartbeats was stored: the live state does not hold their endpoint
    JsonObject node = http.get(replica.coordinatorPort(), "/v1/nodes/" + nodeId, admin).bodyAsJsonObject();
    assertTrue(!node.encode().contains("198.51.100.77"), node.encode());
  }
}
