package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A root kept outside the coordinator, end to end with the offline commands' code and openssl: a
 * deployment started with the embedded root moves to an offline root (the replica makes the
 * intermediate's key and CSR, the operator signs it with {@code meshplane ca sign}, the upload with the
 * new root stages a root rotation the embedded root cross-signs), after which no root key is held by
 * the coordinator, node certificates chain to the offline root, the coordinator cannot rotate the
 * intermediate by itself, and an intermediate signed offline rotates it.
 */
@Timeout(120)
class OfflineRootTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  @TempDir static Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("meshca.secret", "a test secret for MeshCA, at least thirty-two bytes", "meshca.auto_rotate", "false"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  HttpResponse<Buffer> post(String path, JsonObject body) {
    return http.send(HttpMethod.POST, replica.coordinatorPort(), path, admin, body);
  }

  /** A request's CSR signed offline: the intermediate's PEM. */
  String signOffline(Path root, String name) throws Exception {
    HttpResponse<Buffer> req = post("/v1/meshca/intermediates/requests", new JsonObject());
    assertEquals(201, req.statusCode(), req.bodyAsString());
    Path csr = dir.resolve(name + ".csr.pem");
    Files.writeString(csr, req.bodyAsJsonObject().getString("csr"));
    Path out = dir.resolve(name + ".pem");
    OfflineCa.sign(root, csr, out, Duration.ofDays(90), () -> "correct horse battery staple".toCharArray());
    return Files.readString(out);
  }

  void runToRetired(String id) {
    for (String phase : new String[] {"staged", "distributing", "issuing"}) {
      HttpResponse<Buffer> r = post("/v1/meshca/rotations/" + id + "/advance", new JsonObject().put("phase", phase));
      assertEquals(200, r.statusCode(), r.bodyAsString());
    }
  }

  @Test
  void aDeploymentMovesToAnOfflineRootAndRotatesItsIntermediateFromOfflineSignatures() throws Exception {
    Path root = dir.resolve("root");
    OfflineCa.init(root, "mesh.local", Duration.ofDays(3650), () -> "correct horse battery staple".toCharArray());
    String rootPem = Files.readString(root.resolve("root.pem"));
    String intermediate = signOffline(root, "first");

    // hostile uploads change nothing
    HttpResponse<Buffer> garbage = post("/v1/meshca/intermediates", new JsonObject().put("certificate", "not a certificate"));
    assertEquals(400, garbage.statusCode());
    assertTrue(garbage.bodyAsString().contains("\"certificate\""), garbage.bodyAsString());
    HttpResponse<Buffer> unknownKey = post("/v1/meshca/intermediates", new JsonObject().put("certificate", rootPem));
    assertEquals(400, unknownKey.statusCode(), unknownKey.bodyAsString());
    HttpResponse<Buffer> noRoot = post("/v1/meshca/intermediates", new JsonObject().put("certificate", intermediate));
    assertEquals(400, noRoot.statusCode(), "signed by a root the bundle does not hold, and no root sent: " + noRoot.bodyAsString());
    assertEquals(400, post("/v1/meshca/intermediates", new JsonObject().put("certificate", intermediate).put("root", intermediate)).statusCode(),
        "a root that is not self-signed");
    assertEquals(null, http.get(replica.coordinatorPort(), "/v1/meshca/rotation", admin).bodyAsJsonObject().getValue("rotation"));

    // the upload with the new root: a root rotation, cross-signed by the embedded root, run to its end
    HttpResponse<Buffer> staged = post("/v1/meshca/intermediates", new JsonObject().put("certificate", intermediate).put("root", rootPem));
    assertEquals(201, staged.statusCode(), staged.bodyAsString());
    assertEquals("root", staged.bodyAsJsonObject().getString("kind"));
    runToRetired(staged.bodyAsJsonObject().getString("id"));
    String bundle = http.get(replica.coordinatorPort(), "/v1/meshca/bundle", admin).bodyAsString();
    assertEquals(rootPem.trim(), bundle.trim(), "the bundle is the offline root alone");
    long keysHeld = Http.await(replica.pool().query("SELECT count(*) AS n FROM meshca_authorities WHERE kind = 'root' AND state <> 'retired' "
        + "AND sealed_key IS NOT NULL").execute(), 10).iterator().next().getLong("n");
    assertEquals(0, keysHeld, "no root key in the coordinator");

    // the coordinator cannot sign an intermediate by itself any more; one signed offline rotates it
    HttpResponse<Buffer> refused = post("/v1/meshca/rotations", new JsonObject().put("kind", "intermediate"));
    assertEquals(409, refused.statusCode(), refused.bodyAsString());
    assertTrue(refused.bodyAsString().contains("/v1/meshca/intermediates"), refused.bodyAsString());
    String second = signOffline(root, "second");
    HttpResponse<Buffer> rotated = post("/v1/meshca/intermediates", new JsonObject().put("certificate", second));
    assertEquals(201, rotated.statusCode(), rotated.bodyAsString());
    assertEquals("intermediate", rotated.bodyAsJsonObject().getString("kind"));
    runToRetired(rotated.bodyAsJsonObject().getString("id"));
    // a node certificate (from the intermediate signed offline) chains to the offline root (openssl)
    Nodes.Enrolled n = Nodes.enroll(http, replica.coordinatorPort(), admin, "offline-1", "off", "prod");
    JsonObject pki = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("pki", new JsonObject().put("csr", TestCsrs.csr(TestCsrs.pair("EC"))))).bodyAsJsonObject().getJsonObject("pki");
    Files.writeString(dir.resolve("node.pem"), pki.getJsonObject("certificate").getString("pem"));
    Files.writeString(dir.resolve("chain.pem"), pki.getJsonObject("certificate").getString("chain"));
    // the node's next heartbeat says what it holds (a node getting a certificate holds a rotation back until then)
    JsonObject cert = pki.getJsonObject("certificate");
    assertEquals(200, http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("pki", new JsonObject().put("serial", cert.getString("serial")).put("not_after", cert.getString("not_after"))
            .put("bundle", pki.getJsonObject("bundle").getString("version")).put("revocations", pki.getJsonObject("revocations").getLong("version"))
            .put("issuer", cert.getString("issuer")))).statusCode());
    OpenSsl.Result ok = OpenSsl.run(dir, "verify", "-CAfile", root.resolve("root.pem").toString(), "-untrusted", "chain.pem", "node.pem");
    assertTrue(ok.output().contains("node.pem: OK"), ok.output());

    assertEquals(400, post("/v1/meshca/intermediates", new JsonObject().put("certificate", second)).statusCode(), "a request is used once");
    String audit = http.get(replica.coordinatorPort(), "/v1/audit?action=meshca.intermediate.request", admin).bodyAsString();
    assertTrue(audit.contains("meshca.intermediate.request"), audit);
  }
}
