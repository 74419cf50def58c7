package io.meshplane.watch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The watch stream against two real replicas and PostgreSQL (API.md §11, "The watch stream"): a change
 * made on one replica reaches a stream held on the other, with the content and versions a heartbeat
 * answer would carry; deletion and the node's limit; hostile query parameters and another node's
 * token. Replica b admits 3 streams a second (the admission test).
 */
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class WatchStreamTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;
  static Vertx vertx;

  @BeforeAll
  static void start() {
    cluster = TestCluster.of(2);
    Map<String, String> common = Map.of("writebehind.flush_interval", "100ms", "watch.max_buffer", "4096", "watch.ping", "2s");
    a = cluster.start(0, common);
    java.util.HashMap<String, String> slow = new java.util.HashMap<>(common);
    slow.put("watch.admit_per_second", "3");
    b = cluster.start(1, slow);
    http = cluster.http();
    admin = cluster.admin();
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void stop() {
    if (vertx != null) vertx.close();
    if (cluster != null) cluster.close();
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static JsonObject grant(String src, String dst, String... ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray(List.of(ports)));
  }

  static void policy(String team, JsonObject... grants) {
    JsonArray g = new JsonArray();
    for (JsonObject o : grants) g.add(o);
    var req = http.request(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=" + team + "&environment=prod").bearerTokenAuthentication(admin)
        .putHeader("Content-Type", "application/json");
    HttpResponse<Buffer> r = http.send(req, new JsonObject().put("grants", g).encode().getBytes());
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, long peers, long acl, String... endpoints) {
    JsonObject body = new JsonObject().put("known", new JsonObject().put("peers", peers).put("acl", acl));
    if (endpoints.length > 0) body.put("endpoints", new JsonArray(List.of((Object[]) endpoints)));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** A stream on {@code via}, retried while the replica's admission rate refuses it (b admits 3 a second). */
  static WatchClient admitted(Meshplane via, Nodes.Enrolled n, String query, boolean http2) {
    return Await.until("a stream admitted", () -> {
      WatchClient w = WatchClient.open(vertx, via.coordinatorPort(), n.id(), n.token(), query, http2);
      if (w.status == 503) w.close();
      return w;
    }, w -> w.status != 503);
  }

  /** The parts of an answer that versions govern, with the peer lists as sets (their order is not specified). */
  static JsonObject content(JsonObject answer) {
    JsonObject peers = answer.getJsonObject("peers").copy();
    for (String k : List.of("items", "changed", "removed")) {
      if (peers.containsKey(k)) peers.put(k, new JsonArray(List.copyOf(new HashSet<>(peers.getJsonArray(k).getList()))));
    }
    return new JsonObject().put("relay", answer.getString("relay")).put("peers", peers.encode()).put("acl", answer.getJsonObject("acl"))
        .put("services", answer.getJsonArray("services")).put("commands", answer.getJsonArray("commands"));
  }

  @Test
  void aChangeMadeOnOneReplicaReachesAStreamOnTheOtherAsAHeartbeatAnswerWouldSayIt() {
    Nodes.Enrolled web = enroll("w-web", "wt1", "tag:web");
    Nodes.Enrolled db = enroll("w-db", "wt1", "tag:db");
    policy("wt1", grant("tag:web", "tag:db", "tcp/5432"));
    cluster.awaitChangesApplied();
    JsonObject first = beat(b, db, 0, 0);
    long peers = first.getJsonObject("peers").getLong("version");
    long acl = first.getJsonObject("acl").getLong("version");
    try (WatchClient w = admitted(b, db, "peers=" + peers + "&acl=" + acl, false)) {
      assertEquals(200, w.status, w.body);
      assertEquals("application/x-ndjson", w.response.getHeader("Content-Type"));
      JsonObject hello = w.nextAnswer(10_000);
      assertEquals(true, hello.getJsonObject("peers").getBoolean("unchanged"), hello.encode());
      assertEquals(true, hello.getJsonObject("acl").getBoolean("unchanged"), hello.encode());
      assertNotNull(hello.getString("committed_at"));

      // a policy change on replica a: the stream on b carries db's new rules, as a heartbeat answer to the same versions says them
      policy("wt1", grant("tag:web", "tag:db", "tcp/5432", "tcp/6432"));
      JsonObject change = w.nextAnswer(10_000);
      assertTrue(change.getJsonObject("acl").getLong("version") > acl, change.encode());
      assertTrue(change.getJsonObject("acl").getJsonArray("rules").encode().contains("tcp/6432"), change.encode());
      assertTrue(change.getLong("seq") >= change.getJsonObject("acl").getLong("version"), change.encode());
      assertTrue(!Instant.parse(change.getString("committed_at")).isAfter(Instant.parse(change.getString("server_time"))), change.encode());
      assertEquals(content(beat(b, db, peers, acl)), content(change), "the stream and the heartbeat answer agree");
      long acl2 = change.getJsonObject("acl").getLong("version");
      long peers2 = Math.max(peers, change.getJsonObject("peers").getLong("version"));

      // a peer's new endpoint (its heartbeat to replica a, flushed, logged): a delta naming it
      beat(a, web, 0, 0, "198.51.100.7:41641");
      JsonObject delta = w.nextAnswer(10_000);
      JsonArray changed = delta.getJsonObject("peers").getJsonArray("changed");
      assertNotNull(changed, delta.encode());
      assertEquals(web.id(), changed.getJsonObject(0).getString("id"));
      assertEquals(new JsonArray().add("198.51.100.7:41641"), changed.getJsonObject(0).getJsonArray("endpoints"));
      assertEquals(true, delta.getJsonObject("acl").getBoolean("unchanged"), delta.encode());
      assertEquals(content(beat(b, db, peers2, acl2)), content(delta), "the stream and the heartbeat answer agree");
    }
  }

  /** A PKCS#10 CSR (base64 of its DER) for a new ECDSA P-256 key. */
  static String csr() throws Exception {
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    java.security.KeyPair k = g.generateKeyPair();
    var b = new org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder(new javax.security.auth.x500.X500Principal("CN=x"), k.getPublic());
    return java.util.Base64.getEncoder().encodeToString(
        b.build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA").build(k.getPrivate())).getEncoded());
  }

  @Test
  void aRevocationReachesAStreamThatHoldsMeshcasListsWithoutAHeartbeat() throws Exception {
    Nodes.Enrolled n = enroll("w-pki", "wt9", "tag:web");
    JsonObject issued = http.send(HttpMethod.POST, b.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("pki", new JsonObject().put("csr", csr()))).bodyAsJsonObject().getJsonObject("pki");
    String serial = issued.getJsonObject("certificate").getString("serial");
    String bundle = issued.getJsonObject("bundle").getString("version");
    long revocations = issued.getJsonObject("revocations").getLong("version");
    try (WatchClient w = admitted(b, n, "pki_bundle=" + bundle + "&pki_revocations=" + revocations, false)) {
      assertEquals(200, w.status, w.body);
      JsonObject hello = w.nextAnswer(10_000);
      assertEquals(null, hello.getValue("pki"), "the stream's first answer: the agent holds the current bundle and list " + hello.encode());
      // revoked through replica a: the stream on b carries the delta at once (no heartbeat is sent meanwhile)
      HttpResponse<Buffer> revoke = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/meshca/certificates/" + serial + "/revoke", admin,
          new JsonObject().put("reason", "keyCompromise"));
      assertEquals(200, revoke.statusCode(), revoke.bodyAsString());
      JsonObject change = Await.until("the revocation on the stream", 10_000, () -> w.nextAnswer(10_000), x -> x.getValue("pki") != null);
      JsonObject r = change.getJsonObject("pki").getJsonObject("revocations");
      assertEquals(revoke.bodyAsJsonObject().getLong("revocation_version"), r.getLong("version"), change.encode());
      assertEquals(serial, r.getJsonArray("added").getJsonObject(0).getString("serial"), change.encode());
      assertEquals(true, change.getJsonObject("pki").getJsonObject("bundle").getBoolean("unchanged"), change.encode());
    }
    // without the pki parameters a stream carries no pki
    try (WatchClient w = admitted(b, n, "", false)) {
      assertEquals(null, w.nextAnswer(10_000).getValue("pki"));
    }
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "pki_bundle=NOT/ok", false)) {
      assertEquals(400, w.status, w.body);
      assertTrue(w.body.contains("pki_bundle"), w.body);
    }
  }

  @Test
  void aRouteChangeReachesAnIngressNodesStreamWithoutAHeartbeat() throws Exception {
    Nodes.Enrolled edge = enroll("w-edge", "wting", "tag:edge");
    Nodes.Enrolled web = enroll("w-web", "wting", "tag:web");
    assertEquals(200, http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/nodes/" + web.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray().add("web:8080"))).statusCode());
    policy("wting", grant("tag:edge", "tag:web", "tcp/8080"));
    try (WatchClient w = admitted(b, edge, "peers=0&acl=0", false)) {
      assertEquals(200, w.status, w.body);
      assertEquals(null, w.nextAnswer(10_000).getValue("ingress_routes"), "no route yet: no block");
      JsonObject route = new JsonObject().put("team", "wting").put("environment", "prod").put("hostname", "w.example.com")
          .put("target", new JsonObject().put("node", web.id()).put("service", "web")).put("exposure", "mesh").put("tls", "meshca")
          .put("ingress_tag", "tag:edge");
      HttpResponse<Buffer> created = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/ingress/routes", admin, route);
      assertEquals(201, created.statusCode(), created.bodyAsString());
      JsonObject change = Await.until("the route on the stream", 10_000, () -> w.nextAnswer(10_000), x -> x.getValue("ingress_routes") != null);
      JsonObject block = change.getJsonObject("ingress_routes");
      assertEquals("1", block.getString("version"), change.encode());
      assertEquals(created.bodyAsJsonObject().getString("id"), block.getJsonArray("routes").getJsonObject(0).getString("id"));
      assertEquals(8080, block.getJsonArray("routes").getJsonObject(0).getJsonObject("target").getInteger("port"));
    }
    // a stream opened with the version the agent applied: unchanged, then nothing new
    try (WatchClient w = admitted(b, edge, "peers=0&acl=0&ingress=1", false)) {
      assertEquals(new JsonObject().put("version", "1").put("unchanged", true), w.nextAnswer(10_000).getJsonObject("ingress_routes"));
    }
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), edge.id(), edge.token(), "ingress=NOT/ok", false)) {
      assertEquals(400, w.status, w.body);
      assertTrue(w.body.contains("\"ingress\""), w.body);
    }
  }

  @Test
  void overHttp2AStreamStartsWithTheFullSetAHeartbeatWouldGive() {
    Nodes.Enrolled web = enroll("h2-web", "wt2", "tag:web");
    Nodes.Enrolled db = enroll("h2-db", "wt2", "tag:db");
    policy("wt2", grant("tag:web", "tag:db", "tcp/5432"));
    cluster.awaitChangesApplied();
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), web.id(), web.token(), "peers=0&acl=0", true)) {
      assertEquals(200, w.status, w.body);
      assertEquals(io.vertx.core.http.HttpVersion.HTTP_2, w.response.version());
      JsonObject hello = w.nextAnswer(10_000);
      assertEquals(db.id(), hello.getJsonObject("peers").getJsonArray("items").getJsonObject(0).getString("id"), hello.encode());
      assertEquals(content(beat(a, web, 0, 0)), content(hello));
      // nothing changes: a ping (watch.ping is 2 s here) carrying the versions the stream holds
      JsonObject ping = w.next(10_000);
      assertEquals("ping", ping.getString("type"), ping.encode());
      assertEquals(hello.getJsonObject("peers").getLong("version"), ping.getLong("peers"));
    }
  }

  @Test
  void deletingTheNodeEndsItsStreamsOnEveryReplica() {
    Nodes.Enrolled n = enroll("w-gone", "wt3", "tag:web");
    cluster.awaitChangesApplied();
    try (WatchClient onA = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false);
         WatchClient onB = admitted(b, n, "", true)) {
      assertEquals(200, onA.status, onA.body);
      assertEquals(200, onB.status, onB.body);
      onA.nextAnswer(10_000);
      onB.nextAnswer(10_000);
      long t0 = System.currentTimeMillis();
      assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + n.id(), admin, null).statusCode());
      for (WatchClient w : List.of(onA, onB)) {
        JsonObject close = w.nextAnswer(10_000);
        assertEquals("close", close.getString("type"), close.encode());
        assertTrue(Set.of("node_deleted", "token_revoked").contains(close.getString("reason")), close.encode());
        Await.until("the stream ended", () -> w.ended.isDone());
      }
      long took = System.currentTimeMillis() - t0;
      assertTrue(took < 3000, "both streams ended " + took + " ms after the delete answered (target: within 1 s)");
    }
    // and the credential opens none again
    try (WatchClient again = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false)) {
      assertEquals(401, again.status, again.body);
    }
  }

  @Test
  void aNodeHoldsAtMostTwoStreamsAcrossTheCluster() {
    Nodes.Enrolled n = enroll("w-cap", "wt4", "tag:web");
    cluster.awaitChangesApplied();
    try (WatchClient one = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false);
         WatchClient two = admitted(b, n, "", true)) {
      assertEquals(200, one.status, one.body);
      assertEquals(200, two.status, two.body);
      try (WatchClient three = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", true)) {
        assertEquals(409, three.status, three.body);
        assertEquals("too_many_streams", three.problem().getString("code"));
      }
      one.close();
      // the agent went away: its place is free again once the replica has seen it go
      Await.until("a place is free again", () -> {
        try (WatchClient again = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false)) {
          return again.status == 200;
        }
      });
    }
  }

  @Test
  void newStreamsBeyondTheAdmissionRateAreRefusedWithRetryAfter() {
    Nodes.Enrolled n1 = enroll("w-adm1", "wt5", "tag:web");
    Nodes.Enrolled n2 = enroll("w-adm2", "wt5", "tag:web");
    Nodes.Enrolled n3 = enroll("w-adm3", "wt5", "tag:web");
    cluster.awaitChangesApplied();
    double before = Metrics.value(http, b.coordinatorPort(), "mesh_watch_refused_total{reason=\"rate\"}");
    double openedBefore = Metrics.value(http, b.coordinatorPort(), "mesh_watch_opened_total");
    int refused = 0;
    int accepted = 0;
    String retryAfter = null;
    java.util.List<WatchClient> open = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < 3 && refused == 0; i++) {
        for (Nodes.Enrolled n : List.of(n1, n2, n3)) {
          WatchClient w = WatchClient.open(vertx, b.coordinatorPort(), n.id(), n.token(), "", true);
          open.add(w);
          if (w.status == 503) {
            refused++;
            retryAfter = w.response.getHeader("Retry-After");
            assertEquals("unavailable", w.problem().getString("code"));
          } else if (w.status == 200) {
            accepted++;
          }
        }
      }
    } finally {
      open.forEach(WatchClient::close);
    }
    assertTrue(refused > 0, "some of the burst is refused at 3 streams a second");
    assertNotNull(retryAfter);
    assertTrue(Integer.parseInt(retryAfter) >= 1);
    assertTrue(Metrics.value(http, b.coordinatorPort(), "mesh_watch_refused_total{reason=\"rate\"}") - before >= refused);
    // what the replica-kill drill reads as the accept rate: every stream that opened, none that was refused
    assertTrue(accepted > 0);
    assertEquals(accepted, Metrics.value(http, b.coordinatorPort(), "mesh_watch_opened_total") - openedBefore, 0.0);
  }

  @Test
  void hostileQueriesAndAnotherNodesTokenAreRefused() {
    Nodes.Enrolled n = enroll("w-bad", "wt6", "tag:web");
    Nodes.Enrolled other = enroll("w-other", "wt6", "tag:web");
    for (String q : List.of("peers=-1", "peers=abc", "acl=1e3", "peers=99999999999999999999", "acl=")) {
      try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), q, false)) {
        assertEquals(400, w.status, q + ": " + w.body);
        String field = q.substring(0, q.indexOf('='));
        assertEquals(field, w.problem().getJsonArray("errors").getJsonObject(0).getString("field"), w.body);
      }
    }
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "since=1", false)) {
      assertEquals(400, w.status, w.body);
    }
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), n.id(), other.token(), "", false)) {
      assertEquals(403, w.status, w.body);
    }
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), n.id(), admin, "", false)) {
      assertEquals(403, w.status, w.body);
    }
  }

  @Test
  void anAgentThatDoesNotReadIsCutOffAsASlowReaderAndCounted() {
    Nodes.Enrolled db = enroll("w-slow", "wt7", "tag:db");
    JsonObject[] grants = new JsonObject[60];
    for (int i = 0; i < grants.length; i++) {
      grants[i] = grant("10." + i + ".0.0/16", "tag:db", "tcp/1001", "tcp/1002", "tcp/1003", "tcp/1004", "tcp/1005", "tcp/1006");
    }
    policy("wt7", grants);
    cluster.awaitChangesApplied();
    double before = Metrics.value(http, a.coordinatorPort(), "mesh_watch_closed_total{reason=\"slow_reader\"}");
    // HTTP/2 with a 1 KiB window and the response never read: the first answer (about 8 KiB of rules) fills the stream's bound
    try (WatchClient w = WatchClient.open(vertx, a.coordinatorPort(), db.id(), db.token(), "peers=0&acl=0", true, 1024)) {
      assertEquals(200, w.status, w.body);
      grants[0] = grant("10.0.0.0/16", "tag:db", "tcp/2001");
      policy("wt7", grants);
      Await.until("the stream was cut as a slow reader",
          () -> Metrics.value(http, a.coordinatorPort(), "mesh_watch_closed_total{reason=\"slow_reader\"}") > before);
      Await.until("the agent saw its stream end", () -> w.ended.isDone());
    }
  }

  @Test
  @org.junit.jupiter.api.Order(Integer.MAX_VALUE)
  void aStoppingReplicaEndsItsStreamsWithDrainingAndAdmitsNoMore() {
    Nodes.Enrolled n = enroll("w-drain", "wt8", "tag:web");
    Nodes.Enrolled m = enroll("w-drain2", "wt8", "tag:web");
    cluster.awaitChangesApplied();
    try (WatchClient one = admitted(b, n, "", false); WatchClient two = admitted(b, m, "", true)) {
      one.nextAnswer(10_000);
      two.nextAnswer(10_000);
      b.close();
      for (WatchClient w : List.of(one, two)) {
        JsonObject close = w.nextAnswer(10_000);
        assertEquals("close", close.getString("type"), close.encode());
        assertEquals("draining", close.getString("reason"));
        assertTrue(close.getInteger("retry_after_s") >= 1);
      }
      // the agent moves to the replica that stays: its places were given back
      try (WatchClient moved = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false)) {
        assertEquals(200, moved.status, moved.body);
      }
    }
  }

  static String tokenId(String jwt) {
    String payload = jwt.substring(jwt.indexOf('.') + 1, jwt.lastIndexOf('.'));
    return new JsonObject(new String(java.util.Base64.getUrlDecoder().decode(payload), java.nio.charset.StandardCharsets.UTF_8)).getString("jti");
  }

  @Test
  void aRevokedTokenEndsItsStreamsOnEveryReplicaAndARetiredOneWhenItsGraceEnds() {
    Nodes.Enrolled n = enroll("w-rev", "wt9", "tag:web");
    Nodes.Enrolled m = enroll("w-ret", "wt9", "tag:web");
    cluster.awaitChangesApplied();
    try (WatchClient onA = WatchClient.open(vertx, a.coordinatorPort(), n.id(), n.token(), "", false);
         WatchClient onB = admitted(b, n, "", true);
         WatchClient retired = WatchClient.open(vertx, a.coordinatorPort(), m.id(), m.token(), "", true)) {
      onA.nextAnswer(10_000);
      onB.nextAnswer(10_000);
      retired.nextAnswer(10_000);
      // a revocation as the token service writes it, from replica b: every replica's denylist listener hears it
      long t0 = System.currentTimeMillis();
      b.hazelcast().getReplicatedMap("meshplane.tokens.denied").put(tokenId(n.token()), "revoked:" + t0);
      for (WatchClient w : List.of(onA, onB)) {
        JsonObject close = w.nextAnswer(10_000);
        assertEquals("token_revoked", close.getString("reason"), close.encode());
      }
      long took = System.currentTimeMillis() - t0;
      assertTrue(took < 3000, "both streams ended " + took + " ms after the revocation (target: within 1 s)");
      // a retirement (a rotation's grace): the stream lives on until the grace ends, then ends
      long graceEnds = System.currentTimeMillis() + 1500;
      a.hazelcast().getReplicatedMap("meshplane.tokens.denied").put(tokenId(m.token()), "retired:" + graceEnds);
      JsonObject close = retired.nextAnswer(10_000);
      assertEquals("token_revoked", close.getString("reason"), close.encode());
      assertTrue(System.currentTimeMillis() >= graceEnds, "not before the grace ended");
    }
  }
}
