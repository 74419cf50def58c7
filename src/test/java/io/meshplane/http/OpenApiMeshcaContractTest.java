package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.audit.Actor;
import io.meshplane.common.Ids;
import io.meshplane.common.RequestInfo;
import io.meshplane.meshca.MeshcaModule;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The MeshCA routes answer as openapi.yaml says (requests and answers validated), the refusals too. */
@Timeout(120)
class OpenApiMeshcaContractTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    contract = new ContractCheck(http, app.coordinatorPort(), http.get(app.coordinatorPort(), Meshplane.OPENAPI_PATH).bodyAsString());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String issue(String nodeId) throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    KeyPair pair = g.generateKeyPair();
    byte[] der = new JcaPKCS10CertificationRequestBuilder(new X500Name("CN=x"), pair.getPublic())
        .build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())).getEncoded();
    MeshcaModule.NodeIdentity node = new MeshcaModule.NodeIdentity(nodeId, "ca", "prod", "100.64.3.4", Nodes.key());
    MeshcaModule.Issuance out = app.meshca().issue(new Actor("node", nodeId, "n"), RequestInfo.NONE, node,
        Base64.getEncoder().encodeToString(der)).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    return ((MeshcaModule.Issuance.Issued) out).serial();
  }

  static HttpResponse<Buffer> check(String method, String path, String bearer, String body, String query, int expect) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, null);
    assertEquals(expect, resp.statusCode(), method + " " + path + "?" + query + " -> " + resp.bodyAsString());
    return resp;
  }

  @Test
  void theMeshcaRoutesAnswerAsTheDocumentSays() throws Exception {
    String root = cluster.admin();
    String monitoring = Tokens.issue(app, "ca", "prod", Surface.MONITORING).jwt();
    String nodeId = Ids.next("nd");
    String serial = issue(nodeId);
    issue(nodeId);

    check("GET", "/v1/meshca/bundle", monitoring, null, null, 200);
    check("GET", "/v1/meshca/crl", monitoring, null, "format=pem", 200);
    check("GET", "/v1/meshca/crl", monitoring, null, "format=xml", 400);
    String cursor = check("GET", "/v1/meshca/certificates", monitoring, null, "limit=1&node=" + nodeId + "&state=valid", 200)
        .bodyAsJsonObject().getString("next_cursor");
    check("GET", "/v1/meshca/certificates", monitoring, null, "limit=1&cursor=" + URLEncoder.encode(cursor, StandardCharsets.UTF_8), 200);
    check("GET", "/v1/meshca/certificates", monitoring, null, "expiring_within=48h", 200);
    check("GET", "/v1/meshca/certificates", monitoring, null, "expiring_within=soon", 400);
    check("GET", "/v1/meshca/certificates/" + serial, monitoring, null, null, 200);
    check("GET", "/v1/meshca/certificates/" + "0".repeat(32), monitoring, null, null, 404);
    check("POST", "/v1/meshca/certificates/" + serial + "/revoke", monitoring, "{\"reason\":\"superseded\"}", null, 403);
    check("POST", "/v1/meshca/certificates/" + serial + "/revoke", root, "{\"reason\":\"bored\"}", null, 400);
    check("POST", "/v1/meshca/certificates/" + serial + "/revoke", root, "{\"reason\":\"superseded\"}", null, 200);
    check("POST", "/v1/meshca/certificates/" + serial + "/revoke", root, "{\"reason\":\"superseded\"}", null, 409);
    check("GET", "/v1/meshca/certificates", monitoring, null, "state=revoked", 200);
    check("GET", "/v1/meshca/authorities", monitoring, null, null, 200);
    check("GET", "/v1/meshca/authorities", monitoring, null, "kind=root", 400);
    check("GET", "/v1/meshca/summary", monitoring, null, null, 200);
    check("GET", "/v1/meshca/summary", root, null, null, 200);
    check("GET", "/v1/meshca/summary", monitoring, null, "team=other", 400);
    check("GET", "/v1/meshca/summary", Tokens.issue(app, "ca", "prod", Surface.PIPELINE).jwt(), null, null, 403);
    assertEquals(List.of(), contract.findings());
  }

  @Test
  void heartbeatsWithAPkiBlockAnswerAsTheDocumentSays() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "pki-contract", "ca", "prod");
    String path = "/v1/nodes/" + n.id() + "/heartbeat";
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    KeyPair pair = g.generateKeyPair();
    String csr = Base64.getEncoder().encodeToString(new JcaPKCS10CertificationRequestBuilder(new X500Name("CN=x"), pair.getPublic())
        .build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())).getEncoded());
    io.vertx.core.json.JsonObject pki = check("POST", path, n.token(), "{\"pki\":{\"csr\":\"" + csr + "\"}}", null, 200)
        .bodyAsJsonObject().getJsonObject("pki");
    io.vertx.core.json.JsonObject cert = pki.getJsonObject("certificate");
    // what the node holds, reported back: both parts unchanged, no certificate
    io.vertx.core.json.JsonObject held = new io.vertx.core.json.JsonObject().put("serial", cert.getString("serial")).put("not_after", cert.getString("not_after"))
        .put("bundle", pki.getJsonObject("bundle").getString("version")).put("revocations", pki.getJsonObject("revocations").getLong("version"));
    io.vertx.core.json.JsonObject again = check("POST", path, n.token(), new io.vertx.core.json.JsonObject().put("pki", held).encode(), null, 200)
        .bodyAsJsonObject().getJsonObject("pki");
    assertEquals(true, again.getJsonObject("bundle").getBoolean("unchanged"));
    assertEquals(true, again.getJsonObject("revocations").getBoolean("unchanged"));
    assertEquals(null, again.getValue("certificate"));
    // revoked since: the node at its version gets a delta ("added"), a node without one the whole list ("items")
    assertEquals(200, http.send(io.vertx.core.http.HttpMethod.POST, app.coordinatorPort(), "/v1/meshca/certificates/" + cert.getString("serial")
        + "/revoke", cluster.admin(), new io.vertx.core.json.JsonObject().put("reason", "superseded")).statusCode());
    io.vertx.core.json.JsonObject delta = check("POST", path, n.token(), new io.vertx.core.json.JsonObject().put("pki", held).encode(), null, 200)
        .bodyAsJsonObject().getJsonObject("pki").getJsonObject("revocations");
    assertEquals(cert.getString("serial"), delta.getJsonArray("added").getJsonObject(0).getString("serial"), delta.encode());
    io.vertx.core.json.JsonObject full = check("POST", path, n.token(), "{\"pki\":{}}", null, 200)
        .bodyAsJsonObject().getJsonObject("pki").getJsonObject("revocations");
    assertTrue(full.getJsonArray("items").encode().contains(cert.getString("serial")), full.encode());
    check("POST", path, n.token(), "{\"pki\":{\"csr\":\"bm90IGEgY3Ny\"}}", null, 400);
    check("POST", path, n.token(), "{\"pki\":{\"serial\":\"XYZ\"}}", null, 400);
    assertEquals(List.of(), contract.findings());
  }
}
