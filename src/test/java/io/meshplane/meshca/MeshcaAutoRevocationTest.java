package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The revocations nobody asks for, on a real replica: deleting a node (alone or in a bulk) revokes its
 * certificates ({@code cessationOfOperation}) in the deletion's transaction, so the certificate reads
 * revoked and the CRL (read by openssl) lists it; a re-key, once the write-behind makes the new key
 * durable, revokes the certificates of the old key ({@code superseded}) and keeps the one a CSR got for
 * the new key. Both audited. And the revocations reach a node as a delta from the version it holds.
 */
@Timeout(180)
class MeshcaAutoRevocationTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;
  static int port;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("meshca.secret", MeshcaTest.SECRET, "writebehind.flush_interval", "200ms"));
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    port = app.coordinatorPort();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  /** A heartbeat of node {@code n} with {@code pki} (and the key it reports, or null); the answer's pki block. */
  static JsonObject beat(Nodes.Enrolled n, String key, JsonObject pki) {
    JsonObject body = Nodes.beat(1).put("pki", pki);
    if (key != null) body.put("public_key", key);
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonObject("pki");
  }

  static JsonObject certify(Nodes.Enrolled n, String key) throws Exception {
    JsonObject c = beat(n, key, new JsonObject().put("csr", TestCsrs.csr(TestCsrs.pair("EC")))).getJsonObject("certificate");
    assertTrue(c != null && c.getString("serial") != null, String.valueOf(c));
    return c;
  }

  /** Moves a certificate's issue time two minutes back (past the one-a-minute rule for a node's same key). */
  static void age(String serial) throws Exception {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      st.executeUpdate("UPDATE meshca_certificates SET issued_at = issued_at - interval '2 minutes' WHERE serial = '" + serial + "'");
    }
  }

  static JsonObject certificate(String serial) {
    HttpResponse<Buffer> r = http.get(port, "/v1/meshca/certificates/" + serial, admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** The CRL as openssl reads it. */
  static String crlText(Path dir) throws Exception {
    HttpResponse<Buffer> der = http.get(port, "/v1/meshca/crl", admin);
    assertEquals(200, der.statusCode());
    Files.write(dir.resolve("crl.der"), der.body().getBytes());
    OpenSsl.Result text = OpenSsl.run(dir, "crl", "-inform", "DER", "-in", "crl.der", "-noout", "-text");
    assertEquals(0, text.exit(), text.output());
    return text.output();
  }

  static String storedKey(String nodeId) {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT reported_key FROM nodes WHERE id = '" + nodeId + "'")) {
      return rs.next() ? rs.getString(1) : null;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static List<String> audit(String serial) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT actor_type || ' ' || coalesce(details->>'cause', '') || ' ' || coalesce(details->>'reason', '') "
             + "FROM audit_events WHERE action = 'meshca.revoke' AND target_id = '" + serial + "'")) {
      while (rs.next()) out.add(rs.getString(1));
    }
    return out;
  }

  @Test
  void deletingANodeRevokesItsCertificatesInTheDeletionsTransaction(@TempDir Path dir) throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, port, admin, "gone-1", "team-a", "prod");
    JsonObject first = certify(n, null);
    age(first.getString("serial")); // a node gets one certificate a minute for the same key: the first is made older
    JsonObject second = certify(n, null);
    long before = app.meshca().revocationVersion();

    HttpResponse<Buffer> deleted = http.send(HttpMethod.DELETE, port, "/v1/nodes/" + n.id(), admin, null);
    assertEquals(204, deleted.statusCode(), deleted.bodyAsString());
    assertTrue(app.meshca().revocationVersion() > before, "this replica's list holds them when the deletion answers");
    String crl = crlText(dir).toLowerCase(Locale.ROOT);
    for (JsonObject c : List.of(first, second)) {
      JsonObject now = certificate(c.getString("serial"));
      assertEquals("revoked", now.getString("state"), now.encode());
      assertEquals("cessationOfOperation", now.getString("reason"), now.encode());
      assertTrue(crl.contains(c.getString("serial")), crl);
      assertEquals(List.of("token node.delete cessationOfOperation"), audit(c.getString("serial")));
    }
    assertTrue(crl.contains("cessation of operation"), crl);
  }

  @Test
  void aCsrInFlightWhileItsNodeIsDeletedIsNotIssued() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, port, admin, "gone-2", "team-a", "prod");
    String csr = TestCsrs.csr(TestCsrs.pair("EC"));
    try (Connection c = cluster.db().connect()) {
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        // a deletion under way: the node's row is deleted, not committed yet
        assertEquals(1, st.executeUpdate("DELETE FROM nodes WHERE id = '" + n.id() + "'"));
      }
      java.util.concurrent.CompletableFuture<HttpResponse<Buffer>> answer = java.util.concurrent.CompletableFuture.supplyAsync(() ->
          http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(1).put("pki", new JsonObject().put("csr", csr))));
      // the signed certificate's insert waits for the deletion (the node row's key-share lock)
      Await.until("the insert waiting for the deletion", 20_000, () -> waitingOnNodeLock() > 0);
      c.commit();
      HttpResponse<Buffer> r = answer.get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals(404, r.statusCode(), r.bodyAsString());
    }
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM meshca_certificates WHERE node_id = '" + n.id() + "'")) {
      rs.next();
      assertEquals(0, rs.getInt(1), "no certificate for a deleted node");
    }
  }

  static int waitingOnNodeLock() {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR KEY SHARE%'")) {
      rs.next();
      return rs.getInt(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aBulkDeletionRevokesTooAndANodeWithoutCertificatesIsDeletedAsBefore(@TempDir Path dir) throws Exception {
    Nodes.Enrolled certified = Nodes.enroll(http, port, admin, "bulk-1", "team-a", "prod");
    Nodes.Enrolled plain = Nodes.enroll(http, port, admin, "bulk-2", "team-a", "prod");
    JsonObject c = certify(certified, null);
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/bulk", admin,
        new JsonObject().put("action", "delete").put("ids", new JsonArray().add(certified.id()).add(plain.id())));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    for (Object o : r.bodyAsJsonObject().getJsonArray("results")) {
      assertEquals("ok", ((JsonObject) o).getString("outcome"), r.bodyAsString());
    }
    assertEquals("revoked", certificate(c.getString("serial")).getString("state"));
    assertTrue(crlText(dir).toLowerCase(Locale.ROOT).contains(c.getString("serial")));
    assertEquals(404, http.get(port, "/v1/nodes/" + plain.id(), admin).statusCode());
  }

  @Test
  void aReKeyRevokesTheOldKeysCertificatesAndTheNewKeysCsrIsIssued(@TempDir Path dir) throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, port, admin, "rekey-1", "team-a", "prod");
    String oldKey = n.node().getString("public_key");
    JsonObject old = certify(n, null);
    assertEquals(oldKey, certificate(old.getString("serial")).getString("wireguard_key"));

    // the agent re-keys: its heartbeat reports the new key with a CSR, which is issued for the new key at once
    String newKey = Nodes.key();
    JsonObject fresh = certify(n, newKey);
    assertEquals(newKey, fresh.getString("wireguard_key"));
    assertEquals(newKey, certificate(fresh.getString("serial")).getString("wireguard_key"));
    // once the write-behind makes the new key durable, the old key's certificate is revoked, superseded
    JsonObject revoked = Await.until("the old key's certificate revoked", 20_000, () -> certificate(old.getString("serial")),
        c -> "revoked".equals(c.getString("state")));
    assertEquals("superseded", revoked.getString("reason"), revoked.encode());
    assertEquals(List.of("system node.rekey superseded"), audit(old.getString("serial")));
    assertEquals("valid", certificate(fresh.getString("serial")).getString("state"), "the new key's certificate is kept");
    String crl = crlText(dir).toLowerCase(Locale.ROOT);
    assertTrue(crl.contains(old.getString("serial")) && !crl.contains(fresh.getString("serial")), crl);
    assertTrue(crl.contains("superseded"), crl);

    // heartbeats that carry the same key again revoke nothing more
    long version = app.meshca().revocationVersion();
    beat(n, newKey, new JsonObject());
    Nodes.Enrolled other = Nodes.enroll(http, port, admin, "rekey-2", "team-a", "prod");
    String otherKey = Nodes.key();
    beat(other, otherKey, new JsonObject()); // a flush of a key change after that heartbeat, on a node without certificates: a fact to wait for
    Await.until("the other node's key flushed", 20_000, () -> otherKey.equals(storedKey(other.id())));
    assertEquals("valid", certificate(fresh.getString("serial")).getString("state"));
    assertEquals(version, app.meshca().revocationVersion(), "nothing else revoked");
  }

  @Test
  void aNodeAtAVersionGetsOnlyWhatCameAfterItAndANodeWithoutOneTheWholeList() throws Exception {
    Nodes.Enrolled n = Nodes.enroll(http, port, admin, "delta-1", "team-a", "prod");
    List<String> serials = new ArrayList<>();
    List<Long> versions = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      String serial = certify(n, null).getString("serial");
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/meshca/certificates/" + serial + "/revoke", admin,
          new JsonObject().put("reason", "keyCompromise"));
      assertEquals(200, r.statusCode(), r.bodyAsString());
      serials.add(serial);
      versions.add(r.bodyAsJsonObject().getLong("revocation_version"));
    }
    long current = versions.get(2);
    // at the first revocation's version: the two after it, as "added"
    JsonObject delta = beat(n, null, new JsonObject().put("revocations", versions.get(0))).getJsonObject("revocations");
    assertEquals(current, delta.getLong("version"), delta.encode());
    assertFalse(delta.containsKey("items"), delta.encode());
    // (the list is in (not_after, serial) order, not in the order of the revocations)
    assertEquals(java.util.Set.of(serials.get(1), serials.get(2)), java.util.Set.copyOf(serialsOf(delta.getJsonArray("added"))));
    assertEquals(2, delta.getJsonArray("added").size(), delta.encode());
    // at the second's: the last one only
    delta = beat(n, null, new JsonObject().put("revocations", versions.get(1))).getJsonObject("revocations");
    assertEquals(List.of(serials.get(2)), serialsOf(delta.getJsonArray("added")));
    // current: unchanged
    assertTrue(beat(n, null, new JsonObject().put("revocations", current)).getJsonObject("revocations").getBoolean("unchanged"));
    // none held, or a version this replica never had (above its own): the whole list
    for (JsonObject pki : List.of(new JsonObject(), new JsonObject().put("revocations", current + 1000))) {
      JsonObject full = beat(n, null, pki).getJsonObject("revocations");
      assertFalse(full.containsKey("added"), full.encode());
      assertTrue(serialsOf(full.getJsonArray("items")).containsAll(serials), full.encode());
    }
  }

  static List<String> serialsOf(JsonArray a) {
    assertNotEquals(null, a);
    List<String> out = new ArrayList<>();
    for (Object o : a) out.add(((JsonObject) o).getString("serial"));
    return out;
  }
}
