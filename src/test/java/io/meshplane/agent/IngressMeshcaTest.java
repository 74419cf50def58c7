package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tls: meshca} end to end, a real coordinator and a real agent: a mesh route with {@code tls:
 * meshca} made through the API makes the edge agent ask MeshCA for a hostname certificate, and a client
 * that trusts only the MeshCA bundle (from {@code GET /v1/meshca/bundle}), with hostname verification
 * on, reaches the target through the agent's TLS listener (which runs without any ACME directory); the
 * certificate names the hostname (DNS SAN, server auth only) and is renewed at two thirds of its
 * (short) lifetime, the next handshake presenting the new one; a request naming a hostname the node
 * does not serve is refused with a problem naming it, and the refusal is audited (a denied {@code meshca.issue_hostnames}).
 */
@Timeout(180)
class IngressMeshcaTest {
  private static final String HOST = "app.meshca.example.com";
  static TestCluster cluster;
  static Http http;
  static int port;
  static String admin;
  static String enrollToken;
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    // node (and so hostname) certificates live 1 minute: the renewal happens within the test
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "writebehind.flush_interval", "100ms",
        "meshca.short_lifetimes", "true", "meshca.node_lifetime", "1m"));
    http = cluster.http();
    port = cluster.replica(0).coordinatorPort();
    admin = cluster.admin();
    enrollToken = Tokens.issue(cluster.replica(0), "meshtls", "prod", Surface.ENROLLMENT).jwt();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  private static HttpResponse<Buffer> send(HttpMethod m, String path, JsonObject body) {
    return http.send(m, port, path, admin, body);
  }

  /**
   * A fresh TLS context trusting only the MeshCA bundle (fresh: a resumed TLS session would show the
   * certificate of the session it resumes).
   */
  private static SSLContext bundleOnly(byte[] bundle) throws Exception {
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    int i = 0;
    for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(bundle))) {
      ks.setCertificateEntry("meshca-" + i++, c);
    }
    assertTrue(i > 0);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ks);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }

  @Test
  void aMeshRouteWithTlsMeshcaIsServedOverTlsVerifiedByTheBundleAndRenewed() throws Exception {
    try (IngressFixture.Target target = new IngressFixture.Target("web")) {
      JsonObject enrolled = send(HttpMethod.POST, "/v1/nodes", new JsonObject().put("name", "mt-web").put("public_key", io.meshplane.testing.Nodes.key())
          .put("team", "meshtls").put("environment", "prod").put("tags", new JsonArray().add("tag:web"))).bodyAsJsonObject();
      String webId = enrolled.getJsonObject("node").getString("id");
      String webAddress = enrolled.getJsonObject("node").getString("address").replaceAll("/.*", "");
      assertEquals(200, send(HttpMethod.PUT, "/v1/nodes/" + webId + "/services",
          new JsonObject().put("services", new JsonArray().add("web:" + target.port()))).statusCode());
      JsonObject grant = new JsonObject().put("src", new JsonArray().add("tag:edge")).put("dst", new JsonArray().add("tag:web"))
          .put("ports", new JsonArray().add("tcp/" + target.port()));
      HttpResponse<Buffer> acl = send(HttpMethod.PUT, "/v1/acl?team=meshtls&environment=prod", new JsonObject().put("grants", new JsonArray().add(grant)));
      assertEquals(200, acl.statusCode(), acl.bodyAsString());

      // a TLS listener without --acme-directory: it serves the tls=meshca routes
      NodeAgent edge = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + port)), enrollToken, "mt-edge",
          List.of("tag:edge"), dir.resolve("edge"), "127.0.0.1", 0, Backoff.standard(), true)
          .withIngress(new IngressEdge.Settings("127.0.0.1", 0).withTls("127.0.0.1", 0).withOverrides(Map.of(webAddress, "127.0.0.1"))
              // the test's client is taken for the web node, a peer of the edge: exposure=mesh serves it
              .withSourceOverrides(Map.of("127.0.0.1", webAddress))));
      try {
        String edgeId = AgentBehaviourTest.nodeId(edge);
        HttpResponse<Buffer> created = send(HttpMethod.POST, "/v1/ingress/routes", new JsonObject().put("team", "meshtls").put("environment", "prod")
            .put("hostname", HOST).put("path_prefix", "/").put("target", new JsonObject().put("node", webId).put("service", "web"))
            .put("exposure", "mesh").put("tls", "meshca").put("ingress_tag", "tag:edge"));
        assertEquals(201, created.statusCode(), created.bodyAsString());
        String routeId = created.bodyAsJsonObject().getString("id");
        HttpResponse<Buffer> b = http.get(port, "/v1/meshca/bundle", admin);
        assertEquals(200, b.statusCode(), b.bodyAsString());
        byte[] bundle = b.body().getBytes();
        SSLContext trust = bundleOnly(bundle);
        int tls = edge.ingress().tlsPort();

        AtomicReference<IngressAcmeTest.Tls> first = new AtomicReference<>();
        Await.until("the route served over TLS with a MeshCA certificate", 30_000, () -> {
          try {
            first.set(IngressAcmeTest.request(trust, tls, HOST));
            return first.get().answer().status() == 200; // 403 mesh_only until the edge holds the web node as a peer
          } catch (java.io.IOException notYet) {
            return false;
          }
        });
        IngressAcmeTest.Tls a = first.get();
        assertEquals(200, a.answer().status(), a.answer().body());
        assertEquals("web", a.answer().json().getString("server"));
        X509Certificate leaf = a.leaf();
        assertEquals(List.of(List.of(2, HOST)), leaf.getSubjectAlternativeNames().stream().map(l -> List.copyOf(l)).toList(),
            "the certificate names the hostname only (no SPIFFE ID, no mesh address)");
        assertEquals(List.of("1.3.6.1.5.5.7.3.1"), leaf.getExtendedKeyUsage(), "server auth only");
        String serial = leaf.getSerialNumber().toString(16);
        String padded = String.format("%32s", serial).replace(' ', '0');
        // another name than the certificate's is not served (no certificate for it, no handshake)
        assertThrows(SSLHandshakeException.class, () -> IngressAcmeTest.request(trust, tls, "other.meshca.example.com"));

        // the serial is reported for the route, and MeshCA lists the certificate with its hostnames
        Await.until("the serial reported", 20_000, () -> http.get(port, "/v1/nodes/" + edgeId, admin).bodyAsJsonObject(),
            n -> n.getValue("ingress_stats") instanceof JsonObject s && s.getJsonObject(routeId) != null
                && padded.equals(s.getJsonObject(routeId).getString("serial")));
        JsonObject listed = http.get(port, "/v1/meshca/certificates/" + padded, admin).bodyAsJsonObject();
        assertEquals(new JsonArray().add(HOST), listed.getJsonArray("hostnames"), listed.encode());
        assertEquals(edgeId, listed.getString("node_id"));

        // renewed at two thirds of its 1-minute lifetime: the next handshake presents the new certificate
        X509Certificate renewed = Await.until("the certificate renewed", 90_000, () -> IngressAcmeTest.request(bundleOnly(bundle), tls, HOST).leaf(),
            c -> !c.getSerialNumber().toString(16).equals(serial));
        assertNotEquals(serial, renewed.getSerialNumber().toString(16));
        assertTrue(renewed.getNotAfter().after(leaf.getNotAfter()));

        // a hostname the node does not serve is refused, naming it; the refusal is audited
        IngressMeshca.Made made = IngressMeshca.csr(List.of("evil.example.com"));
        String token = edge.verticle().session().authorization().substring(7);
        HttpResponse<Buffer> refused = http.send(HttpMethod.POST, port, "/v1/meshca/hostname-certificates", token,
            new JsonObject().put("csr", made.csr()).put("hostnames", new JsonArray().add(HOST).add("evil.example.com")));
        assertEquals(403, refused.statusCode(), refused.bodyAsString());
        JsonObject problem = refused.bodyAsJsonObject();
        assertEquals("hostname_not_served", problem.getString("code"), problem.encode());
        assertEquals("hostnames[1]", problem.getJsonArray("errors").getJsonObject(0).getString("field"));
        assertTrue(problem.getString("detail").contains("evil.example.com"), problem.encode());
        Await.until("the refusal audited", 20_000, () -> http.get(port, "/v1/audit?action=meshca.issue_hostnames", admin).bodyAsJsonObject(),
            l -> l.getJsonArray("items").stream().anyMatch(e -> e instanceof JsonObject j && "denied".equals(j.getString("outcome"))
                && edgeId.equals(j.getJsonObject("actor").getString("id"))));
        // a malformed request: 400 naming the field
        HttpResponse<Buffer> bad = http.send(HttpMethod.POST, port, "/v1/meshca/hostname-certificates", token,
            new JsonObject().put("csr", made.csr()).put("hostnames", new JsonArray()));
        assertEquals(400, bad.statusCode(), bad.bodyAsString());
        assertEquals("hostnames", bad.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
        // an administrator's token is no node: the route is the agent's
        HttpResponse<Buffer> notNode = http.send(HttpMethod.POST, port, "/v1/meshca/hostname-certificates", admin,
            new JsonObject().put("csr", made.csr()).put("hostnames", new JsonArray().add(HOST)));
        assertEquals(403, notNode.statusCode(), notNode.bodyAsString());

        // MeshCA revokes the certificate served: the edge asks for a new one as soon as its revocation list
        // names it, not at the revoked one's renewal time
        String current = renewed.getSerialNumber().toString(16);
        String currentPadded = String.format("%32s", current).replace(' ', '0');
        HttpResponse<Buffer> revoke = http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + currentPadded + "/revoke", admin,
            new JsonObject().put("reason", "keyCompromise"));
        assertEquals(200, revoke.statusCode(), revoke.bodyAsString());
        X509Certificate replaced = Await.until("a new certificate after the revocation", 30_000,
            () -> IngressAcmeTest.request(bundleOnly(bundle), tls, HOST).leaf(), c -> !c.getSerialNumber().toString(16).equals(current));
        assertTrue(!replaced.getNotAfter().before(renewed.getNotAfter()), "replaced " + replaced.getNotBefore() + " - " + replaced.getNotAfter() + ", revoked " + renewed.getNotBefore() + " - " + renewed.getNotAfter());
        assertEquals(currentPadded, edge.ingress().meshca().renewedForRevocation(), "asked again because of the revocation");
      } finally {
        edge.close();
      }
    }
  }
}
