package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.audit.Actor;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * MeshCA on a real replica (PostgreSQL, HTTP on a random port) checked by openssl: a node certificate
 * from a CSR verifies against the served bundle and shows its SPIFFE ID and mesh address; once revoked,
 * the served CRL (which openssl reads) makes openssl refuse it. CSRs with another key type or a bad
 * signature are refused naming {@code pki.csr}; the routes' permissions, scope, bad inputs and audit.
 */
@Timeout(180)
class MeshcaTest {
  static final String SECRET = "a test secret for MeshCA, at least thirty-two bytes";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;
  static int port;
  static int nodes;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("meshca.secret", SECRET, "meshca.trust_domain", "mesh.example.org"));
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    port = app.coordinatorPort();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static MeshcaModule.NodeIdentity node(String team) {
    nodes++;
    String id = io.meshplane.common.Ids.next("nd");
    byte[] wg = new byte[32];
    wg[0] = (byte) nodes;
    return new MeshcaModule.NodeIdentity(id, team, "prod", "100.64.0." + nodes, java.util.Base64.getEncoder().encodeToString(wg));
  }

  static MeshcaModule.Issuance issue(MeshcaModule.NodeIdentity node, String csr) throws Exception {
    return app.meshca().issue(new Actor("node", node.nodeId(), "test"), RequestInfo.NONE, node, csr).toCompletionStage()
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static MeshcaModule.Issuance.Issued issued(MeshcaModule.NodeIdentity node, String csr) throws Exception {
    return assertInstanceOf(MeshcaModule.Issuance.Issued.class, issue(node, csr));
  }

  static Throwable refusal(MeshcaModule.NodeIdentity node, String csr) throws Exception {
    try {
      issue(node, csr);
      throw new AssertionError("issued");
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    }
  }

  @Test
  void openSslVerifiesANodeCertificateAndRefusesItOnceRevoked(@TempDir Path dir) throws Exception {
    MeshcaModule.NodeIdentity node = node("team-a");
    Instant before = Instant.now();
    MeshcaModule.Issuance.Issued c = issued(node, TestCsrs.csr(TestCsrs.pair("EC")));
    HttpResponse<Buffer> bundle = http.get(port, "/v1/meshca/bundle", admin);
    assertEquals(200, bundle.statusCode());
    assertEquals("application/pem-certificate-chain", bundle.getHeader("Content-Type"));
    assertEquals("\"" + c.bundleVersion() + "\"", bundle.getHeader("ETag"));
    Files.writeString(dir.resolve("bundle.pem"), bundle.bodyAsString());
    Files.writeString(dir.resolve("intermediate.pem"), c.chainPem());
    Files.writeString(dir.resolve("node.pem"), c.certificatePem());

    OpenSsl.Result verify = OpenSsl.run(dir, "verify", "-CAfile", "bundle.pem", "-untrusted", "intermediate.pem", "node.pem");
    assertEquals(0, verify.exit(), verify.output());
    assertTrue(verify.output().contains("node.pem: OK"), verify.output());
    OpenSsl.Result text = OpenSsl.run(dir, "x509", "-in", "node.pem", "-noout", "-text");
    assertEquals(0, text.exit(), text.output());
    assertTrue(text.output().contains("URI:spiffe://mesh.example.org/team/team-a/env/prod/node/" + node.nodeId()), text.output());
    assertTrue(text.output().contains("IP Address:" + node.meshAddress()), text.output());
    assertTrue(text.output().contains("TLS Web Client Authentication") && text.output().contains("TLS Web Server Authentication"),
        text.output());
    assertTrue(text.output().contains("/v1/meshca/crl"), "a CRL distribution point: " + text.output());
    assertTrue(text.output().contains(NodeSigner.WIREGUARD_KEY_OID.getId()), "the WireGuard key's extension: " + text.output());
    assertTrue(text.output().contains("Subject: CN = " + node.nodeId()) && !text.output().contains("ignored.example.com"),
        "the CSR's names are ignored: " + text.output());
    // lifetime 24 h, notBefore 5 minutes back, renewal at 30-40 % of it
    assertEquals(Duration.ofHours(24).plusMinutes(5), Duration.between(c.notBefore(), c.notAfter()));
    Duration life = Duration.between(c.notBefore().plus(Duration.ofMinutes(5)), c.notAfter());
    Duration renewIn = Duration.between(c.notBefore().plus(Duration.ofMinutes(5)), c.renewAfter());
    assertTrue(renewIn.compareTo(life.multipliedBy(30).dividedBy(100)) >= 0 && renewIn.compareTo(life.multipliedBy(40).dividedBy(100)) <= 0, renewIn.toString());
    assertTrue(!c.notBefore().isAfter(before.minus(Duration.ofMinutes(4))));

    // the CRL before the revocation: openssl reads it, and the certificate still verifies with -crl_check
    Files.write(dir.resolve("crl0.pem"), crl("pem").body().getBytes());
    OpenSsl.Result ok = OpenSsl.run(dir, "verify", "-crl_check", "-CAfile", "bundle.pem", "-untrusted", "intermediate.pem", "-CRLfile",
        "crl0.pem", "node.pem");
    assertEquals(0, ok.exit(), ok.output());

    HttpResponse<Buffer> revoked = http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + c.serial() + "/revoke", admin,
        new JsonObject().put("reason", "keyCompromise"));
    assertEquals(200, revoked.statusCode(), revoked.bodyAsString());
    assertEquals("revoked", revoked.bodyAsJsonObject().getString("state"));
    long version = revoked.bodyAsJsonObject().getLong("revocation_version");
    assertEquals(version, app.meshca().revocationVersion(), "this replica's list holds it when the answer comes");

    HttpResponse<Buffer> der = crl(null);
    assertEquals("application/pkix-crl", der.getHeader("Content-Type"));
    assertEquals("\"" + version + "\"", der.getHeader("ETag"));
    Files.write(dir.resolve("crl.der"), der.body().getBytes());
    OpenSsl.Result crlText = OpenSsl.run(dir, "crl", "-inform", "DER", "-in", "crl.der", "-noout", "-text");
    assertEquals(0, crlText.exit(), crlText.output());
    assertTrue(crlText.output().toLowerCase(Locale.ROOT).contains(c.serial()), crlText.output());
    assertTrue(crlText.output().contains("Key Compromise"), crlText.output());
    OpenSsl.Result toPem = OpenSsl.run(dir, "crl", "-inform", "DER", "-in", "crl.der", "-out", "crl.pem");
    assertEquals(0, toPem.exit(), toPem.output());
    OpenSsl.Result refused = OpenSsl.run(dir, "verify", "-crl_check", "-CAfile", "bundle.pem", "-untrusted", "intermediate.pem", "-CRLfile",
        "crl.pem", "node.pem");
    assertNotEquals(0, refused.exit(), refused.output());
    assertTrue(refused.output().contains("certificate revoked"), refused.output());
  }

  static HttpResponse<Buffer> crl(String format) {
    HttpResponse<Buffer> r = http.get(port, "/v1/meshca/crl" + (format == null ? "" : "?format=" + format), admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r;
  }

  @Test
  void anEd25519KeyIsAcceptedAndVerifies(@TempDir Path dir) throws Exception {
    MeshcaModule.Issuance.Issued c = issued(node("team-a"), TestCsrs.csr(TestCsrs.pair("Ed25519")));
    Files.writeString(dir.resolve("bundle.pem"), app.meshca().bundlePem());
    Files.writeString(dir.resolve("intermediate.pem"), c.chainPem());
    Files.writeString(dir.resolve("node.pem"), c.certificatePem());
    OpenSsl.Result verify = OpenSsl.run(dir, "verify", "-CAfile", "bundle.pem", "-untrusted", "intermediate.pem", "node.pem");
    assertEquals(0, verify.exit(), verify.output());
    assertTrue(OpenSsl.run(dir, "x509", "-in", "node.pem", "-noout", "-text").output().contains("ED25519"));
  }

  @Test
  void csrsWithAnotherKeyTypeOrABadSignatureOrNoCsrAtAllAreRefusedNamingTheField() throws Exception {
    MeshcaModule.NodeIdentity node = node("team-a");
    for (String[] bad : new String[][] {
        {TestCsrs.csr(TestCsrs.pair("RSA")), "RSA"},
        {TestCsrs.csr(TestCsrs.pair("P-384")), "another curve"},
        {TestCsrs.csr(TestCsrs.pair("EC"), TestCsrs.pair("EC").getPrivate(), "CN=x"), "does not verify"},
        {"", "missing"},
        {"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "CERTIFICATE REQUEST"},
        {"bm90IGEgY3Ny", "not a PKCS#10"},
        {"x".repeat(9000), "longer than"}}) {
      Throwable t = refusal(node, bad[0]);
      Refusal r = assertInstanceOf(Refusal.class, t, String.valueOf(t));
      assertEquals(Refusal.Kind.INVALID, r.kind());
      assertEquals("pki.csr", r.errors().get(0).field(), r.getMessage());
      assertTrue(r.getMessage().contains(bad[1]), r.getMessage());
    }
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM meshca_certificates WHERE node_id = '" + node.nodeId() + "'")) {
      rs.next();
      assertEquals(0, rs.getInt(1), "nothing was issued");
    }
  }

  @Test
  void theRoutesKeepTheirPermissionsScopeAndInputsAndAuditEveryIssuanceAndRevocation() throws Exception {
    MeshcaModule.NodeIdentity node = node("team-a");
    KeyPair pair = TestCsrs.pair("EC");
    MeshcaModule.Issuance.Issued c = issued(node, TestCsrs.csr(pair));
    String monitoring = Tokens.issue(app, "team-a", "prod", Surface.MONITORING).jwt();
    String operator = Tokens.issue(app, "team-a", "prod", Surface.OPERATOR).jwt();
    String otherTeam = Tokens.issue(app, "team-b", "prod", Surface.MONITORING).jwt();
    String path = "/v1/meshca/certificates/" + c.serial();

    // monitoring reads the list, one certificate, the bundle and the CRL; it may not revoke
    HttpResponse<Buffer> list = http.get(port, "/v1/meshca/certificates?node=" + node.nodeId(), monitoring);
    assertEquals(200, list.statusCode(), list.bodyAsString());
    JsonArray items = list.bodyAsJsonObject().getJsonArray("items");
    assertEquals(1, items.size());
    assertEquals("valid", items.getJsonObject(0).getString("state"));
    assertEquals("spiffe://mesh.example.org/team/team-a/env/prod/node/" + node.nodeId(), items.getJsonObject(0).getString("spiffe_id"));
    HttpResponse<Buffer> one = http.get(port, path, monitoring);
    assertEquals(200, one.statusCode());
    assertEquals(c.certificatePem(), one.bodyAsJsonObject().getString("certificate"));
    assertEquals(200, http.get(port, "/v1/meshca/bundle", monitoring).statusCode());
    assertEquals(200, http.get(port, "/v1/meshca/crl", monitoring).statusCode());
    assertEquals(403, http.send(HttpMethod.POST, port, path + "/revoke", monitoring, new JsonObject().put("reason", "superseded")).statusCode());
    // enrollment and pipeline tokens read nothing of MeshCA
    for (Surface s : new Surface[] {Surface.ENROLLMENT, Surface.PIPELINE}) {
      String t = Tokens.issue(app, "team-a", "prod", s).jwt();
      assertEquals(403, http.get(port, "/v1/meshca/certificates", t).statusCode(), s.wire);
      assertEquals(403, http.get(port, "/v1/meshca/bundle", t).statusCode(), s.wire);
    }
    // another team's token does not see it
    assertEquals(404, http.get(port, path, otherTeam).statusCode());
    assertEquals(0, http.get(port, "/v1/meshca/certificates?node=" + node.nodeId(), otherTeam).bodyAsJsonObject().getJsonArray("items").size());
    // If-None-Match with the bundle's ETag
    String etag = http.get(port, "/v1/meshca/bundle", monitoring).getHeader("ETag");
    assertEquals(304, http.send(http.request(HttpMethod.GET, port, "/v1/meshca/bundle").bearerTokenAuthentication(monitoring)
        .putHeader("If-None-Match", etag)).statusCode());

    // hostile inputs: 4xx naming the field
    assertField(http.get(port, "/v1/meshca/certificates?state=bogus", monitoring), 400, "state");
    assertField(http.get(port, "/v1/meshca/certificates?expiring_within=soon", monitoring), 400, "expiring_within");
    assertField(http.get(port, "/v1/meshca/certificates?expiring_within=-1d", monitoring), 400, "expiring_within");
    assertField(http.get(port, "/v1/meshca/certificates?node=../etc", monitoring), 400, "node");
    assertField(http.get(port, "/v1/meshca/certificates?color=red", monitoring), 400, "color");
    assertField(http.get(port, "/v1/meshca/crl?format=xml", monitoring), 400, "format");
    assertField(http.send(HttpMethod.POST, port, path + "/revoke", operator, new JsonObject().put("reason", "bored")), 400, "reason");
    assertField(http.send(HttpMethod.POST, port, path + "/revoke", operator, new JsonObject()), 400, "reason");
    assertField(http.send(HttpMethod.POST, port, path + "/revoke", operator,
        new JsonObject().put("reason", "superseded").put("serial", "x")), 400, "serial");
    assertEquals(404, http.get(port, "/v1/meshca/certificates/not-a-serial", monitoring).statusCode());
    assertEquals(404, http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + "0".repeat(32) + "/revoke", operator,
        new JsonObject().put("reason", "superseded")).statusCode());

    // the operator revokes; a second revocation conflicts; the filters see it
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, path + "/revoke", operator, new JsonObject().put("reason", "superseded"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(409, http.send(HttpMethod.POST, port, path + "/revoke", operator, new JsonObject().put("reason", "superseded")).statusCode());
    JsonArray revoked = http.get(port, "/v1/meshca/certificates?state=revoked&node=" + node.nodeId(), monitoring).bodyAsJsonObject()
        .getJsonArray("items");
    assertEquals(1, revoked.size());
    assertEquals("superseded", revoked.getJsonObject(0).getString("reason"));
    assertEquals(0, http.get(port, "/v1/meshca/certificates?state=valid&node=" + node.nodeId(), monitoring).bodyAsJsonObject()
        .getJsonArray("items").size());

    // audited: the issuance (by the node) and the revocation (by the operator's token), with the team of the certificate
    try (Connection conn = cluster.db().connect(); Statement st = conn.createStatement();
         ResultSet rs = st.executeQuery("SELECT action, actor_type, target_type, target_id, team, environment, outcome FROM audit_events "
             + "WHERE action LIKE 'meshca.%' AND (target_id = '" + node.nodeId() + "' OR target_id = '" + c.serial() + "') "
             + "ORDER BY at, action")) {
      StringBuilder seen = new StringBuilder();
      while (rs.next()) {
        seen.append(rs.getString(1)).append(' ').append(rs.getString(2)).append(' ').append(rs.getString(3)).append(' ')
            .append(rs.getString(5)).append('/').append(rs.getString(6)).append(' ').append(rs.getString(7)).append('\n');
      }
      String s = seen.toString();
      assertTrue(s.contains("meshca.issue node node team-a/prod success"), s);
      assertTrue(s.contains("meshca.revoke token certificate team-a/prod success"), s);
    }
    try (Connection conn = cluster.db().connect(); Statement st = conn.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM audit_events WHERE action = 'meshca.revoke' AND outcome = 'denied'")) {
      rs.next();
      assertTrue(rs.getInt(1) >= 1, "the monitoring token's try is audited");
    }
  }

  @Test
  void expiringWithinListsTheCertificatesThatExpireSoonestFirstInPages() throws Exception {
    MeshcaModule.NodeIdentity node = node("team-c");
    for (int i = 0; i < 3; i++) issued(node, TestCsrs.csr(TestCsrs.pair("EC")));
    String monitoring = Tokens.issue(app, "team-c", "prod", Surface.MONITORING).jwt();
    assertEquals(0, http.get(port, "/v1/meshca/certificates?expiring_within=1h", monitoring).bodyAsJsonObject().getJsonArray("items")
        .size(), "24 h certificates do not expire within the hour");
    HttpResponse<Buffer> first = http.get(port, "/v1/meshca/certificates?expiring_within=25h&limit=2", monitoring);
    assertEquals(2, first.bodyAsJsonObject().getJsonArray("items").size());
    String cursor = first.bodyAsJsonObject().getString("next_cursor");
    HttpResponse<Buffer> second = http.get(port, "/v1/meshca/certificates?expiring_within=25h&limit=2&cursor=" + cursor, monitoring);
    assertEquals(1, second.bodyAsJsonObject().getJsonArray("items").size());
    assertEquals(null, second.bodyAsJsonObject().getString("next_cursor"));
    String a = first.bodyAsJsonObject().getJsonArray("items").getJsonObject(1).getString("not_after");
    String b = second.bodyAsJsonObject().getJsonArray("items").getJsonObject(0).getString("not_after");
    assertTrue(a.compareTo(b) <= 0, a + " then " + b);
  }

  static void assertField(HttpResponse<Buffer> r, int status, String field) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
    JsonArray errors = r.bodyAsJsonObject().getJsonArray("errors");
    assertTrue(errors != null && errors.stream().anyMatch(e -> field.equals(((JsonObject) e).getString("field"))),
        field + " named in " + r.bodyAsString());
    assertTrue(!r.bodyAsString().contains("Exception"), r.bodyAsString());
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
