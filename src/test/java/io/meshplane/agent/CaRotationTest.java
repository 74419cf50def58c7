package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * CA rotation as the fleet lives it, against a real replica, real agents and openssl: each phase
 * advances only when the online nodes' heartbeats show they hold what it needs (a node that does not is
 * listed, and the advance is refused naming the count); agents follow the phases on their own (a new
 * bundle, a renewal when told their certificate's issuer no longer signs); a root rotation's chains
 * verify under the old bundle and the new one (cross-signed); a rollback brings the old intermediate
 * back; only an admin of every team may rotate.
 */
@Timeout(180)
class CaRotationTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  static String enrollToken;
  final List<NodeAgent> agents = new ArrayList<>();
  @TempDir Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "heartbeat.stale_after", "4s",
        "meshca.secret", "a test secret for MeshCA, at least thirty-two bytes", "meshca.auto_rotate", "false"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    enrollToken = Tokens.issue(replica, "rot", "prod", Surface.ENROLLMENT).jwt();
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

  NodeAgent meshAgent(String name) {
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())),
        enrollToken, name, List.of("tag:web"), dir.resolve(name), "127.0.0.1", 0, Backoff.standard()).withMeshTls("127.0.0.1", 0));
    agents.add(a);
    return a;
  }

  /** A TLS handshake each way between two agents' mesh listeners, with their current certificates and bundles: both trusted. */
  void peersTrustEachOther(NodeAgent a, NodeAgent b, String when) {
    for (NodeAgent[] pair : new NodeAgent[][] {{a, b}, {b, a}}) {
      String to = pair[1].verticle().session().nodeId();
      HttpResponse<Buffer> r = http.get(pair[0].listenPort(), "/peers/" + to + "/tls?target=127.0.0.1:" + pair[1].meshTlsPort());
      assertEquals(200, r.statusCode(), r.bodyAsString());
      assertEquals("trusted", r.bodyAsJsonObject().getString("verdict"), when + ": " + r.bodyAsString());
    }
  }

  JsonObject certificate(NodeAgent a) {
    return http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("certificate");
  }

  JsonObject awaitCertificate(NodeAgent a, String what, Predicate<JsonObject> condition) {
    return Await.until(what, 60_000, () -> certificate(a), c -> c != null && condition.test(c));
  }

  JsonObject rotation() {
    HttpResponse<Buffer> r = http.get(replica.coordinatorPort(), "/v1/meshca/rotation", admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  HttpResponse<Buffer> post(String path, JsonObject body) {
    return http.send(HttpMethod.POST, replica.coordinatorPort(), path, admin, body);
  }

  JsonObject step(String id, String what, String phase) {
    HttpResponse<Buffer> r = post("/v1/meshca/rotations/" + id + "/" + what, new JsonObject().put("phase", phase));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Waits until the open rotation's preview is ready (every online node holds what the next phase needs). */
  JsonObject awaitReady() {
    return Await.until("the rotation's next phase ready", 60_000, () -> rotation().getJsonObject("preview"), p -> p != null && p.getBoolean("ready"));
  }

  String bundle() {
    return http.get(replica.coordinatorPort(), "/v1/meshca/bundle", admin).bodyAsString();
  }

  /** openssl verify of the agent's certificate with its chain, under {@code bundlePem}: "OK" or openssl's words. */
  String verify(Path work, JsonObject statePki, String bundlePem, String name) throws Exception {
    Files.writeString(work.resolve(name + "-bundle.pem"), bundlePem);
    Files.writeString(work.resolve(name + "-chain.pem"), statePki.getString("chain"));
    Files.writeString(work.resolve(name + "-node.pem"), statePki.getString("certificate"));
    Process p = new ProcessBuilder("openssl", "verify", "-CAfile", name + "-bundle.pem", "-untrusted", name + "-chain.pem", name + "-node.pem")
        .directory(work.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    p.waitFor();
    return p.exitValue() == 0 ? "OK" : out;
  }

  JsonObject statePki(String name) {
    try {
      return new JsonObject(Files.readString(dir.resolve(name).resolve(StateDir.STATE))).getJsonObject("pki");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void anIntermediateRotationAdvancesOnlyWhenTheFleetHoldsWhatItNeedsAndAgentsRenewOnTheirOwn() throws Exception {
    NodeAgent a = agent("rot-a");
    NodeAgent b = agent("rot-b");
    JsonObject ca = awaitCertificate(a, "a's certificate", c -> "valid".equals(c.getString("verdict")));
    awaitCertificate(b, "b's certificate", c -> "valid".equals(c.getString("verdict")));
    String oldIssuer = ca.getString("issuer");
    String bundleBefore = bundle();
    // a node that reports holding a certificate of the old intermediate and never renews: the holdout
    Nodes.Enrolled h = Nodes.enroll(http, replica.coordinatorPort(), admin, "rot-holdout", "rot", "prod");
    JsonObject holdoutBeat = Nodes.beat(1).put("pki", new JsonObject().put("serial", "00ff").put("not_after", "2099-01-01T00:00:00Z")
        .put("bundle", ca.getString("bundle")).put("revocations", 0).put("issuer", oldIssuer));
    assertEquals(200, http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + h.id() + "/heartbeat", h.token(), holdoutBeat).statusCode());

    HttpResponse<Buffer> started = post("/v1/meshca/rotations", new JsonObject().put("kind", "intermediate"));
    assertEquals(201, started.statusCode(), started.bodyAsString());
    JsonObject r = started.bodyAsJsonObject();
    String id = r.getString("id");
    assertEquals("staged", r.getString("phase"));
    assertEquals(409, post("/v1/meshca/rotations", new JsonObject().put("kind", "root")).statusCode(), "one rotation at a time");
    assertEquals(409, post("/v1/meshca/rotations/" + id + "/advance", new JsonObject().put("phase", "issuing")).statusCode(),
        "the phase the caller saw is checked");
    step(id, "advance", "staged");
    assertEquals(bundleBefore, bundle(), "an intermediate rotation changes no bundle");
    awaitReady();
    step(id, "advance", "distributing");

    // issuing: the agents are told their issuer no longer signs, and renew from the new intermediate on their own
    String newIssuer = r.getString("new_intermediate");
    awaitCertificate(a, "a renewed from the new intermediate", c -> newIssuer.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    awaitCertificate(b, "b renewed from the new intermediate", c -> newIssuer.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    JsonObject p = Await.until("only the holdout left", 30_000, () -> rotation().getJsonObject("preview"), x -> x.getLong("behind") == 1);
    assertEquals(List.of(h.id()), p.getJsonArray("holdouts").getList(), p.encode());
    assertTrue(p.getLong("online") >= 3, p.encode());
    HttpResponse<Buffer> refused = post("/v1/meshca/rotations/" + id + "/advance", new JsonObject().put("phase", "issuing"));
    assertEquals(409, refused.statusCode(), refused.bodyAsString());
    assertEquals("not_ready", refused.bodyAsJsonObject().getString("code"), refused.bodyAsString());
    assertTrue(refused.bodyAsString().contains("1 online node"), refused.bodyAsString());
    JsonObject holdoutRecord = http.get(replica.coordinatorPort(), "/v1/nodes/" + h.id(), admin).bodyAsJsonObject();
    assertEquals("behind", holdoutRecord.getJsonObject("pki_sync").getString("state"), holdoutRecord.encode());

    // the holdout goes quiet: stale nodes are counted apart and no longer hold the rotation back
    JsonObject stale = Await.until("the holdout stale", 30_000, () -> rotation().getJsonObject("preview"), x -> x.getBoolean("ready"));
    assertEquals(1, stale.getLong("stale_behind"), stale.encode());
    JsonObject done = step(id, "advance", "issuing");
    assertEquals("retired", done.getString("phase"));
    assertEquals(null, rotation().getValue("rotation"));
    assertEquals(id, rotation().getJsonArray("history").getJsonObject(0).getString("id"));

    // the renewed certificate verifies under the served bundle (openssl); the node records say current
    Path work = Files.createDirectories(dir.resolve("openssl"));
    Await.until("a's renewed certificate saved", 10_000, () -> statePki("rot-a").getString("chain") != null
        && !statePki("rot-a").getString("certificate").isEmpty() && certificate(a).getString("serial").equals(serialOfSaved("rot-a")));
    assertEquals("OK", verify(work, statePki("rot-a"), bundle(), "a"));
    String aId = a.verticle().session().nodeId();
    JsonObject sync = Await.until("a's pki_sync current", 10_000, () -> http.get(replica.coordinatorPort(), "/v1/nodes/" + aId, admin)
        .bodyAsJsonObject().getJsonObject("pki_sync"), s -> "current".equals(s.getString("state")));
    assertEquals(newIssuer, sync.getString("issuer"));

    // every step audited
    String audit = http.get(replica.coordinatorPort(), "/v1/audit?action=meshca.rotation.advance", admin).bodyAsString();
    assertTrue(audit.contains(id), audit);
  }

  String serialOfSaved(String name) {
    java.security.cert.X509Certificate x;
    try {
      x = (java.security.cert.X509Certificate) java.security.cert.CertificateFactory.getInstance("X.509")
        .generateCertificate(new java.io.ByteArrayInputStream(statePki(name).getString("certificate").getBytes()));
    } catch (java.security.cert.CertificateException e) {
      throw new IllegalStateException(e);
    }
    String hex = x.getSerialNumber().toString(16);
    return "0".repeat(Math.max(0, 32 - hex.length())) + hex;
  }

  @Test
  void aRootRotationIsCrossSignedSoEitherBundleVerifiesAndRollsBackBeforeRetirement() throws Exception {
    NodeAgent a = meshAgent("root-a");
    NodeAgent b = meshAgent("root-b");
    JsonObject first = awaitCertificate(a, "a's certificate", c -> "valid".equals(c.getString("verdict")));
    awaitCertificate(b, "b's certificate", c -> "valid".equals(c.getString("verdict")));
    peersTrustEachOther(a, b, "before the rotation");
    String oldBundle = bundle();
    String oldIssuer = first.getString("issuer");

    JsonObject r = post("/v1/meshca/rotations", new JsonObject().put("kind", "root")).bodyAsJsonObject();
    String id = r.getString("id");
    assertEquals("root", r.getString("kind"), r.encode());
    step(id, "advance", "staged");
    String both = bundle();
    assertNotEquals(oldBundle, both, "the new root joins the bundle");
    assertTrue(both.startsWith(oldBundle) || both.contains(oldBundle.trim()), "the old root stays in it");
    awaitCertificate(a, "a holds the new bundle", c -> !c.getString("bundle").equals(first.getString("bundle")));
    peersTrustEachOther(a, b, "distributing");
    awaitReady();
    step(id, "advance", "distributing");
    String newIssuer = r.getString("new_intermediate");
    awaitCertificate(a, "a renewed under the new root", c -> newIssuer.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    peersTrustEachOther(a, b, "issuing, a renewed");
    Await.until("a's new certificate saved", 10_000, () -> certificate(a).getString("serial").equals(serialOfSaved("root-a")));

    // cross-signed: the new certificate verifies under the old bundle alone and under the new root alone
    Path work = Files.createDirectories(dir.resolve("openssl-root"));
    JsonObject saved = statePki("root-a");
    assertEquals("OK", verify(work, saved, oldBundle, "old"), "a peer holding only the old root verifies it");
    assertEquals("OK", verify(work, saved, both, "both"));
    String newRootOnly = both.substring(both.indexOf(oldBundle.trim()) + oldBundle.trim().length()).trim() + "\n";
    assertTrue(newRootOnly.contains("BEGIN CERTIFICATE"), newRootOnly);
    assertEquals("OK", verify(work, saved, newRootOnly, "new"), "a peer holding only the new root verifies it");

    // rolled back while issuing: the old intermediate signs again, the bundle is the old one, the agent renews back
    JsonObject back = step(id, "rollback", "issuing");
    assertEquals("rolled_back", back.getString("phase"));
    assertEquals(oldBundle, bundle());
    peersTrustEachOther(a, b, "rolled back, before renewing");
    awaitCertificate(a, "a renewed from the old intermediate", c -> oldIssuer.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    awaitCertificate(b, "b renewed from the old intermediate", c -> oldIssuer.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    peersTrustEachOther(a, b, "rolled back");
    assertEquals(404, post("/v1/meshca/rotations/" + id + "/advance", new JsonObject()).statusCode(), "a finished rotation moves no more");

    // only an admin of every team rotates; hostile bodies are refused naming the field
    String operator = Tokens.issue(replica, "rot", "prod", Surface.OPERATOR).jwt();
    assertEquals(403, http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/meshca/rotations", operator,
        new JsonObject().put("kind", "intermediate")).statusCode());
    String teamAdmin = Tokens.issue(replica, "rot", "prod", Surface.ADMIN).jwt();
    HttpResponse<Buffer> scoped = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/meshca/rotations", teamAdmin,
        new JsonObject().put("kind", "intermediate"));
    assertEquals(403, scoped.statusCode(), scoped.bodyAsString());
    HttpResponse<Buffer> bad = post("/v1/meshca/rotations", new JsonObject().put("kind", "everything"));
    assertEquals(400, bad.statusCode());
    assertTrue(bad.bodyAsString().contains("\"kind\""), bad.bodyAsString());
    assertEquals(400, post("/v1/meshca/rotations", new JsonObject().put("kind", "root").put("force", true)).statusCode());
    assertEquals(null, rotation().getValue("rotation"), "nothing was started by the refusals");

    // a root rotation run to its end: the peers trust each other at every phase, and the old root leaves the bundle
    JsonObject again = post("/v1/meshca/rotations", new JsonObject().put("kind", "root")).bodyAsJsonObject();
    String id2 = again.getString("id");
    step(id2, "advance", "staged");
    awaitReady();
    peersTrustEachOther(a, b, "second rotation, distributing");
    step(id2, "advance", "distributing");
    String issuer2 = again.getString("new_intermediate");
    awaitCertificate(a, "a renewed", c -> issuer2.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    peersTrustEachOther(a, b, "second rotation, issuing");
    awaitCertificate(b, "b renewed", c -> issuer2.equals(c.getString("issuer")) && "valid".equals(c.getString("verdict")));
    awaitReady();
    assertEquals("retired", step(id2, "advance", "issuing").getString("phase"));
    assertTrue(!bundle().contains(oldBundle.trim()), "the old root left the bundle");
    awaitCertificate(a, "a holds the bundle without the old root", c -> !c.getString("bundle").equals(first.getString("bundle"))
        && "valid".equals(c.getString("verdict")));
    awaitCertificate(b, "b holds it", c -> "valid".equals(c.getString("verdict")) && c.getString("bundle").equals(certificate(a).getString("bundle")));
    peersTrustEachOther(a, b, "retired");
  }
}
