package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.audit.Actor;
import io.meshplane.common.RequestInfo;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.x509.Extension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code GET /v1/meshca/authorities} and {@code GET /v1/meshca/summary} on a real replica: the CA
 * certificates as the bundle and the issued chain hold them; the caller's nodes counted by the state of
 * their latest unrevoked certificate (another team's not counted), the histogram of time to expiry, the
 * revoked ones; their permissions and hostile query parameters; the gauges of /metrics.
 */
@Timeout(180)
class MeshcaStatusTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;
  static int port;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("meshca.secret", MeshcaTest.SECRET));
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    port = app.coordinatorPort();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  /** A node enrolled in team/prod and a certificate issued for it (as its heartbeat would). */
  static MeshcaModule.Issuance.Issued certify(Nodes.Enrolled n, String team) throws Exception {
    MeshcaModule.NodeIdentity id = new MeshcaModule.NodeIdentity(n.id(), team, "prod", n.node().getString("address").replaceAll("/.*", ""),
        n.node().getString("public_key"));
    MeshcaModule.Issuance out = app.meshca().issue(new Actor("node", n.id(), n.name()), RequestInfo.NONE, id,
        TestCsrs.csr(TestCsrs.pair("EC"))).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    return assertInstanceOf(MeshcaModule.Issuance.Issued.class, out);
  }

  /** Moves a certificate's lifetime so that it ends {@code endsIn} from now (negative: in the past), 24 h long. */
  static void shift(String serial, Duration endsIn) throws Exception {
    Instant end = Instant.now().plus(endsIn);
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      assertEquals(1, st.executeUpdate("UPDATE meshca_certificates SET not_before = '" + end.minus(Duration.ofHours(24)) + "', not_after = '"
          + end + "' WHERE serial = '" + serial + "'"));
    }
  }

  static HttpResponse<Buffer> revoke(String serial) {
    return http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + serial + "/revoke", admin, new JsonObject().put("reason", "superseded"));
  }

  @Test
  void theSummaryCountsTheCallersNodesByTheirCurrentCertificateAndNotAnotherTeams() throws Exception {
    Nodes.Enrolled valid = Nodes.enroll(http, port, admin, "valid", "sum-a", "prod");
    Nodes.Enrolled expiring = Nodes.enroll(http, port, admin, "expiring", "sum-a", "prod");
    Nodes.Enrolled expired = Nodes.enroll(http, port, admin, "expired", "sum-a", "prod");
    Nodes.enroll(http, port, admin, "none", "sum-a", "prod");
    Nodes.Enrolled revoked = Nodes.enroll(http, port, admin, "revoked", "sum-a", "prod");
    Nodes.Enrolled renewed = Nodes.enroll(http, port, admin, "renewed", "sum-a", "prod");
    Nodes.Enrolled other = Nodes.enroll(http, port, admin, "other", "sum-b", "prod");

    certify(valid, "sum-a");
    shift(certify(expiring, "sum-a").serial(), Duration.ofHours(3)); // past half its lifetime, 1-6 h left
    shift(certify(expired, "sum-a").serial(), Duration.ofHours(-1));
    assertEquals(200, revoke(certify(revoked, "sum-a").serial()).statusCode());
    // a node whose latest certificate is revoked counts by the one before it (here 7 days left)
    MeshcaModule.Issuance.Issued older = certify(renewed, "sum-a");
    shift(older.serial(), Duration.ofDays(3));
    assertEquals(200, revoke(certify(renewed, "sum-a").serial()).statusCode());
    // another team's: valid, expired and revoked, none of which team sum-a's callers count
    certify(other, "sum-b");
    shift(certify(other, "sum-b").serial(), Duration.ofHours(-2));
    assertEquals(200, revoke(certify(other, "sum-b").serial()).statusCode());

    String monitoring = Tokens.issue(app, "sum-a", "prod", Surface.MONITORING).jwt();
    HttpResponse<Buffer> r = http.get(port, "/v1/meshca/summary", monitoring);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    JsonObject s = r.bodyAsJsonObject();
    assertEquals(new JsonObject().put("team", "sum-a").put("environment", "prod"), s.getJsonObject("scope"));
    assertEquals(new JsonObject().put("valid", 2).put("expiring", 1).put("expired", 1).put("none", 2), s.getJsonObject("nodes"), s.encode());
    assertEquals(2, s.getLong("revoked_unexpired"), s.encode());
    JsonArray buckets = s.getJsonArray("time_to_expiry");
    assertEquals(6, buckets.size());
    StringBuilder seen = new StringBuilder();
    for (Object o : buckets) {
      JsonObject b = (JsonObject) o;
      seen.append(b.getString("name")).append('=').append(b.getLong("count")).append(' ');
    }
    assertEquals("under_1h=0 1h_6h=1 6h_12h=0 12h_24h=1 1d_7d=1 over_7d=0 ", seen.toString());
    assertEquals(3600, buckets.getJsonObject(1).getLong("from_s"));
    assertEquals(21600, buckets.getJsonObject(1).getLong("to_s"));
    assertEquals(null, buckets.getJsonObject(5).getValue("to_s"));

    // the latest revocations: ?state=revoked&order=latest, the latest to expire first
    JsonArray latest = http.get(port, "/v1/meshca/certificates?state=revoked&order=latest&limit=1", monitoring).bodyAsJsonObject()
        .getJsonArray("items");
    JsonArray soonest = http.get(port, "/v1/meshca/certificates?state=revoked&limit=2", monitoring).bodyAsJsonObject().getJsonArray("items");
    assertEquals(2, soonest.size());
    assertEquals(soonest.getJsonObject(1).getString("serial"), latest.getJsonObject(0).getString("serial"));
    MeshcaTest.assertField(http.get(port, "/v1/meshca/certificates?order=newest", monitoring), 400, "order");

    // the other team sees its own only
    String otherTeam = Tokens.issue(app, "sum-b", "prod", Surface.MONITORING).jwt();
    JsonObject b = http.get(port, "/v1/meshca/summary", otherTeam).bodyAsJsonObject();
    assertEquals(new JsonObject().put("valid", 1).put("expiring", 0).put("expired", 0).put("none", 0), b.getJsonObject("nodes"), b.encode());
    assertEquals(1, b.getLong("revoked_unexpired"));
    // a whole-mesh caller counts both teams
    JsonObject all = http.get(port, "/v1/meshca/summary", admin).bodyAsJsonObject();
    assertTrue(all.getJsonObject("nodes").getLong("valid") >= 3 && all.getJsonObject("nodes").getLong("expired") >= 1, all.encode());

    // the panel's mirror, for a viewer of team sum-a
    PanelSession.user(app, "sum-viewer", "viewer", "sum-a", "prod");
    PanelSession viewer = PanelSession.signIn(http, app.panelPort(), "sum-viewer");
    HttpResponse<Buffer> mirrored = viewer.get(app.panelPort(), "/api/v1/meshca/summary");
    assertEquals(200, mirrored.statusCode(), mirrored.bodyAsString());
    assertEquals(s.getJsonObject("nodes"), mirrored.bodyAsJsonObject().getJsonObject("nodes"));

    // the gauges: the whole mesh, sampled by this replica (the oldest member, the only one)
    Await.until("the node certificate gauges count the expired nodes", 40_000,
        () -> Metrics.value(http, port, "mesh_meshca_node_certificates{state=\"expired\"}"), v -> v >= 1);
    assertTrue(Metrics.value(http, port, "mesh_meshca_node_certificates{state=\"valid\"}") >= 3);
    assertTrue(Metrics.value(http, port, "mesh_meshca_node_certificates{state=\"expiring\"}") >= 1);
  }

  @Test
  void theAuthoritiesAreTheRootAndTheIntermediateTheChainIsMadeOf() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, port, admin, "chain", "auth-a", "prod");
    MeshcaModule.Issuance.Issued issued = certify(n, "auth-a");
    String issuer = http.get(port, "/v1/meshca/certificates/" + issued.serial(), admin).bodyAsJsonObject().getString("issuer");

    String monitoring = Tokens.issue(app, "auth-a", "prod", Surface.MONITORING).jwt();
    HttpResponse<Buffer> r = http.get(port, "/v1/meshca/authorities", monitoring);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    JsonArray items = r.bodyAsJsonObject().getJsonArray("items");
    assertEquals(2, items.size(), items.encode());
    JsonObject root = items.getJsonObject(0);
    JsonObject inter = items.getJsonObject(1);
    assertEquals("root", root.getString("kind"));
    assertEquals("intermediate", inter.getString("kind"));
    assertEquals("active", root.getString("state"));
    assertEquals("active", inter.getString("state"));
    assertEquals(null, root.getValue("parent"));
    assertEquals(root.getString("id"), inter.getString("parent"));
    assertEquals(issuer, inter.getString("id"), "the intermediate listed issued the node's certificate");
    assertEquals(app.meshca().bundlePem(), root.getString("pem"), "the root is the bundle");
    assertEquals(issued.chainPem(), inter.getString("pem"), "the intermediate is the chain");
    for (JsonObject a : new JsonObject[] {root, inter}) {
      X509Certificate x = (X509Certificate) CertificateFactory.getInstance("X.509")
          .generateCertificate(new ByteArrayInputStream(a.getString("pem").getBytes(StandardCharsets.US_ASCII)));
      assertEquals(x.getSerialNumber(), new java.math.BigInteger(a.getString("serial"), 16));
      byte[] ski = ASN1OctetString.getInstance(ASN1OctetString.getInstance(x.getExtensionValue(Extension.subjectKeyIdentifier.getId()))
          .getOctets()).getOctets();
      assertEquals(HexFormat.of().formatHex(ski), a.getString("subject_key_id"));
      assertEquals(x.getNotAfter().toInstant(), Instant.parse(a.getString("not_after")));
      assertTrue(a.getString("subject").contains(a.getString("id")), a.getString("subject"));
      long left = Duration.between(Instant.now(), x.getNotAfter().toInstant()).toSeconds();
      assertTrue(Math.abs(a.getLong("expires_in_s") - left) < 60, a.encode());
    }
    assertTrue(inter.getLong("expires_in_s") > Duration.ofDays(80).toSeconds() && inter.getLong("expires_in_s") <= Duration.ofDays(90).toSeconds());

    // the gauge of each CA's time to expiry, on every replica
    double seconds = Metrics.value(http, port, "mesh_meshca_authority_expiry_seconds{id=\"" + inter.getString("id")
        + "\",kind=\"intermediate\"}");
    assertTrue(Math.abs(seconds - inter.getLong("expires_in_s")) < 60, seconds + " vs " + inter.encode());
    assertTrue(Metrics.value(http, port, "mesh_meshca_authority_expiry_seconds{id=\"" + root.getString("id") + "\",kind=\"root\"}")
        > Duration.ofDays(3000).toSeconds());

    // the panel's mirror
    PanelSession.user(app, "auth-viewer", "viewer", "auth-a", "prod");
    HttpResponse<Buffer> mirrored = PanelSession.signIn(http, app.panelPort(), "auth-viewer").get(app.panelPort(), "/api/v1/meshca/authorities");
    assertEquals(200, mirrored.statusCode(), mirrored.bodyAsString());
    assertEquals(items.size(), mirrored.bodyAsJsonObject().getJsonArray("items").size());
  }

  @Test
  void tokensWithoutMeshcaReadAreRefusedAndQueryParametersAreNamed() {
    for (String path : new String[] {"/v1/meshca/authorities", "/v1/meshca/summary"}) {
      for (Surface s : new Surface[] {Surface.ENROLLMENT, Surface.PIPELINE}) {
        String t = Tokens.issue(app, "sum-a", "prod", s).jwt();
        HttpResponse<Buffer> r = http.get(port, path, t);
        assertEquals(403, r.statusCode(), path + " " + s.wire + ": " + r.bodyAsString());
      }
      assertEquals(401, http.get(port, path).statusCode(), path);
      String monitoring = Tokens.issue(app, "sum-a", "prod", Surface.MONITORING).jwt();
      // no query parameter is taken: a team or environment cannot widen the scope, a limit is not a page
      for (String q : new String[] {"team=sum-b", "environment=dev", "limit=1", "state=expired", "%3Cscript%3E=1", "node=..%2F..%2Fetc"}) {
        HttpResponse<Buffer> r = http.get(port, path + "?" + q, monitoring);
        String name = java.net.URLDecoder.decode(q.substring(0, q.indexOf('=')), StandardCharsets.UTF_8);
        MeshcaTest.assertField(r, 400, name);
      }
    }
  }

  @Test
  void aSummaryIsKeptAFewSecondsPerScope() throws Exception {
    String monitoring = Tokens.issue(app, "kept-a", "prod", Surface.MONITORING).jwt();
    JsonObject first = http.get(port, "/v1/meshca/summary", monitoring).bodyAsJsonObject();
    assertEquals(0, first.getJsonObject("nodes").getLong("valid"));
    certify(Nodes.enroll(http, port, admin, "kept", "kept-a", "prod"), "kept-a");
    // the same answer while it is kept, then the new count
    JsonObject again = http.get(port, "/v1/meshca/summary", monitoring).bodyAsJsonObject();
    assertNotNull(again.getString("at"));
    Await.until("the summary counts the new node", 15_000,
        () -> http.get(port, "/v1/meshca/summary", monitoring).bodyAsJsonObject().getJsonObject("nodes").getLong("valid"), v -> v == 1);
  }
}
