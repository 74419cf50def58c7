package io.meshplane.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.http.Problems;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The token endpoints, their validation, scope boundaries, escalation rules, credentials and the audit trail. */
@Timeout(180)
class TokenApiTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static String root;
  static SigningKeys keys;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    root = cluster.admin();
    keys = SigningKeys.loadOrCreate(cluster.replicas().keysDir());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String in(Duration d) {
    return Instant.now().plus(d).toString();
  }

  static JsonObject tokenBody(String name, String team, String surface, String env, String expires) {
    return new JsonObject().put("name", name)
        .put("scope", new JsonObject().put("team", team).put("surface", surface).put("environment", env))
        .put("expires", expires);
  }

  HttpResponse<Buffer> create(String as, JsonObject body) {
    return http.send(HttpMethod.POST, port, "/v1/auth/tokens", as, body);
  }

  static JsonObject problem(HttpResponse<Buffer> r, int status, String code) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
    assertEquals(Problems.MEDIA_TYPE, r.getHeader("Content-Type"));
    assertEquals(code, r.bodyAsJsonObject().getString("code"), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  long tokenRows() throws Exception {
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM tokens")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void createShowsTheSecretOnceAndTheNewTokenWorksAtOnce() {
    HttpResponse<Buffer> r = create(root, tokenBody("deploy bot", "web", "pipeline", "prod", in(Duration.ofDays(7))));
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject t = r.bodyAsJsonObject();
    assertTrue(t.getString("id").startsWith("tok_"));
    assertEquals("/v1/auth/tokens/" + t.getString("id"), r.getHeader("Location"));
    assertEquals("deploy bot", t.getString("name"));
    assertEquals(new JsonObject().put("team", "web").put("surface", "pipeline").put("environment", "prod"), t.getJsonObject("scope"));
    assertTrue(t.getString("expires").matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"), t.getString("expires"));
    assertNotNull(t.getString("created_by"));
    String secret = t.getString("token");
    assertEquals(3, secret.split("\\.").length);

    JsonObject me = http.get(port, "/v1/auth/whoami", secret).bodyAsJsonObject();
    assertEquals(t.getString("id"), me.getString("token_id"));
    assertEquals(new JsonArray(List.of("nodes:read", "nodes:services")), me.getJsonArray("permissions"));
    assertEquals(t.getString("expires"), me.getString("expires"));

    JsonObject read = http.get(port, "/v1/auth/tokens/" + t.getString("id"), root).bodyAsJsonObject();
    assertNull(read.getValue("token"), "the secret is never shown again");
    assertFalse(http.get(port, "/v1/auth/tokens?limit=1000", root).bodyAsString().contains(secret));
    assertNull(read.getValue("revoked_at"));
  }

  @Test
  void lastUsedAtIsTrackedWithoutAWritePerRequest() throws Exception {
    JsonObject t = create(root, tokenBody("usage", "web", "monitoring", "prod", in(Duration.ofDays(1)))).bodyAsJsonObject();
    String id = t.getString("id");
    assertNull(http.get(port, "/v1/auth/tokens/" + id, root).bodyAsJsonObject().getValue("last_used_at"));
    for (int i = 0; i < 20; i++) assertEquals(200, http.get(port, "/v1/auth/whoami", t.getString("token")).statusCode());
    // visible at once on this replica (from memory), and in PostgreSQL after one coalesced flush
    assertNotNull(http.get(port, "/v1/auth/tokens/" + id, root).bodyAsJsonObject().getString("last_used_at"));
    app.auth().usage().flush().await(10, TimeUnit.SECONDS);
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT last_used_at FROM tokens WHERE id = '" + id + "'")) {
      assertTrue(rs.next());
      assertNotNull(rs.getTimestamp(1));
    }
  }

  @Test
  void invalidCreateRequestsAre400NamingTheFieldAndCreateNothing() throws Exception {
    Map<String, JsonObject> cases = new LinkedHashMap<>();
    cases.put("expires", tokenBody("x", "web", "pipeline", "prod", in(Duration.ofMinutes(-5))));
    cases.put("expires ", tokenBody("x", "web", "pipeline", "prod", in(Duration.ofDays(91))));
    cases.put("expires  ", new JsonObject().put("name", "x").put("scope", new JsonObject().put("team", "web").put("surface", "pipeline").put("environment", "prod")));
    cases.put("expires   ", tokenBody("x", "web", "pipeline", "prod", "next tuesday"));
    cases.put("expires    ", tokenBody("x", "web", "pipeline", "prod", "2026-12-01"));
    // later this second: a JWT's exp is whole seconds, so this token would be born expired
    cases.put("expires     ", tokenBody("x", "web", "pipeline", "prod",
        Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).plusMillis(999).toString()));
    cases.put("name", tokenBody("", "web", "pipeline", "prod", in(Duration.ofDays(1))));
    cases.put("name ", tokenBody("x".repeat(65), "web", "pipeline", "prod", in(Duration.ofDays(1))));
    cases.put("name  ", tokenBody("bad\nname", "web", "pipeline", "prod", in(Duration.ofDays(1))));
    cases.put("name   ", tokenBody("x", "web", "pipeline", "prod", in(Duration.ofDays(1))).put("name", 42));
    cases.put("scope", tokenBody("x", "web", "pipeline", "prod", in(Duration.ofDays(1))).put("scope", "web"));
    cases.put("scope.team", tokenBody("x", "Web Team", "pipeline", "prod", in(Duration.ofDays(1))));
    cases.put("scope.environment", tokenBody("x", "web", "pipeline", "-prod", in(Duration.ofDays(1))));
    cases.put("scope.surface", tokenBody("x", "web", "root", "prod", in(Duration.ofDays(1))));
    long before = tokenRows();
    for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
      JsonObject p = problem(create(root, c.getValue()), 400, "invalid_request");
      List<String> fields = new ArrayList<>();
      p.getJsonArray("errors").forEach(e -> fields.add(((JsonObject) e).getString("field")));
      assertEquals(List.of(c.getKey().trim()), fields, c.getValue().encode());
    }
    problem(http.sendRaw(HttpMethod.POST, port, "/v1/auth/tokens", "application/json", Buffer.buffer("")), 401, "unauthenticated");
    HttpResponse<Buffer> noBody = http.send(http.request(HttpMethod.POST, port, "/v1/auth/tokens").bearerTokenAuthentication(root));
    problem(noBody, 400, "invalid_request");
    assertEquals(before, tokenRows(), "nothing was written");
  }

  @Test
  void escalationAttemptsAre403AndAudited() throws Exception {
    String teamAdmin = Tokens.issue(app, "web", "prod", Surface.ADMIN).jwt();
    String operator = Tokens.issue(app, "web", "prod", Surface.OPERATOR).jwt();
    String starTeamProdAdmin = Tokens.issue(app, "*", "prod", Surface.ADMIN).jwt();
    long before = tokenRows();
    problem(create(operator, tokenBody("esc", "web", "admin", "prod", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(teamAdmin, tokenBody("esc", "*", "operator", "prod", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(teamAdmin, tokenBody("esc", "web", "operator", "*", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(teamAdmin, tokenBody("esc", "db", "operator", "prod", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(starTeamProdAdmin, tokenBody("esc", "web", "operator", "staging", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(teamAdmin, tokenBody("agent", "web", "agent", "prod", in(Duration.ofDays(1)))), 403, "forbidden");
    problem(create(root, tokenBody("agent", "web", "agent", "prod", in(Duration.ofDays(1)))), 403, "forbidden");
    assertEquals(before, tokenRows());
    // allowed: same or narrower scope
    assertEquals(201, create(teamAdmin, tokenBody("ok", "web", "admin", "prod", in(Duration.ofDays(1)))).statusCode());
    assertEquals(201, create(starTeamProdAdmin, tokenBody("ok", "db", "operator", "prod", in(Duration.ofDays(1)))).statusCode());

    String teamAdminId = new JsonObject(new String(java.util.Base64.getUrlDecoder().decode(teamAdmin.split("\\.")[1]),
        StandardCharsets.UTF_8)).getString("jti");
    JsonArray events = http.get(port, "/v1/audit?actor_id=" + teamAdminId + "&action=token.create", root).bodyAsJsonObject().getJsonArray("items");
    long denied = events.stream().filter(e -> "denied".equals(((JsonObject) e).getString("outcome"))).count();
    long ok = events.stream().filter(e -> "success".equals(((JsonObject) e).getString("outcome"))).count();
    assertEquals(4, denied, events.encodePrettily());
    assertEquals(1, ok);
  }

  @Test
  void aTeamSeesNothingOfAnotherTeam() {
    String a = Tokens.issue(app, "team-a", "prod", Surface.ADMIN).jwt();
    String b = Tokens.issue(app, "team-b", "prod", Surface.ADMIN).jwt();
    JsonObject created = create(a, tokenBody("a-script", "team-a", "monitoring", "prod", in(Duration.ofDays(1)))).bodyAsJsonObject();
    String id = created.getString("id");
    assertEquals(200, http.get(port, "/v1/auth/tokens/" + id, a).statusCode());
    problem(http.get(port, "/v1/auth/tokens/" + id, b), 404, "not_found");
    problem(http.send(HttpMethod.DELETE, port, "/v1/auth/tokens/" + id, b, null), 404, "not_found");
    problem(http.send(HttpMethod.POST, port, "/v1/auth/tokens/" + id + "/rotate", b,
        new JsonObject().put("expires", in(Duration.ofDays(1)))), 404, "not_found");
    assertFalse(http.get(port, "/v1/auth/tokens?limit=1000", b).bodyAsString().contains(id));
    assertTrue(http.get(port, "/v1/auth/tokens?limit=1000", a).bodyAsString().contains(id));
    assertFalse(http.get(port, "/v1/audit?limit=1000", b).bodyAsString().contains(id), "team B's audit shows nothing of team A");
    assertTrue(http.get(port, "/v1/audit?limit=1000", a).bodyAsString().contains(id));
    assertEquals(200, http.get(port, "/v1/auth/whoami", created.getString("token")).statusCode(), "B's failed attempts changed nothing");
  }

  @Test
  void listsArePagedById() {
    String admin = Tokens.issue(app, "paging", "prod", Surface.ADMIN).jwt();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(create(admin, tokenBody("p" + i, "paging", "monitoring", "prod", in(Duration.ofDays(1)))).bodyAsJsonObject().getString("id"));
    }
    List<String> seen = new ArrayList<>();
    String cursor = null;
    int pages = 0;
    do {
      JsonObject page = http.get(port, "/v1/auth/tokens?limit=2" + (cursor == null ? "" : "&cursor=" + cursor), admin).bodyAsJsonObject();
      page.getJsonArray("items").forEach(o -> seen.add(((JsonObject) o).getString("id")));
      cursor = page.getString("next_cursor");
      pages++;
    } while (cursor != null && pages < 10);
    assertTrue(seen.containsAll(ids));
    assertEquals(seen.stream().sorted().toList(), seen, "id order");
    assertEquals(seen.size(), seen.stream().distinct().count());
    problem(http.get(port, "/v1/auth/tokens?limit=1001", admin), 400, "invalid_request");
    problem(http.get(port, "/v1/auth/tokens?limit=0", admin), 400, "invalid_request");
    problem(http.get(port, "/v1/auth/tokens?cursor=forged", admin), 400, "invalid_request");
    problem(http.get(port, "/v1/auth/tokens?include_revoked=maybe", admin), 400, "invalid_request");
  }

  @Test
  void revokeIsImmediateAuditedAndHiddenFromTheDefaultList() {
    JsonObject t = create(root, tokenBody("short-lived", "web", "pipeline", "prod", in(Duration.ofDays(1)))).bodyAsJsonObject();
    String id = t.getString("id");
    assertEquals(200, http.get(port, "/v1/auth/whoami", t.getString("token")).statusCode());
    assertEquals(204, http.send(HttpMethod.DELETE, port, "/v1/auth/tokens/" + id, root, null).statusCode());
    HttpResponse<Buffer> rejected = http.get(port, "/v1/auth/whoami", t.getString("token"));
    problem(rejected, 401, "token_revoked");
    assertTrue(rejected.getHeader("WWW-Authenticate").contains("invalid_token"));
    assertEquals(204, http.send(HttpMethod.DELETE, port, "/v1/auth/tokens/" + id, root, null).statusCode(), "idempotent");
    assertNotNull(http.get(port, "/v1/auth/tokens/" + id, root).bodyAsJsonObject().getString("revoked_at"));
    assertFalse(http.get(port, "/v1/auth/tokens?limit=1000", root).bodyAsString().contains(id));
    assertTrue(http.get(port, "/v1/auth/tokens?limit=1000&include_revoked=true", root).bodyAsString().contains(id));
    JsonArray events = http.get(port, "/v1/audit?action=token.revoke&limit=1000", root).bodyAsJsonObject().getJsonArray("items");
    assertTrue(events.stream().anyMatch(e -> id.equals(((JsonObject) e).getJsonObject("target").getString("id"))));
    // the attempt with the revoked token is itself on the trail, attributed to that token
    JsonArray byRevoked = http.get(port, "/v1/audit?actor_id=" + id, root).bodyAsJsonObject().getJsonArray("items");
    assertTrue(byRevoked.stream().anyMatch(e -> "denied".equals(((JsonObject) e).getString("outcome"))), byRevoked.encodePrettily());
  }

  @Test
  void rotationIssuesASuccessorAndRetiresTheOldTokenTheSameDay() {
    JsonObject old = create(root, tokenBody("rotating", "web", "operator", "prod", in(Duration.ofDays(30)))).bodyAsJsonObject();
    String oldId = old.getString("id");
    problem(http.send(HttpMethod.POST, port, "/v1/auth/tokens/" + oldId + "/rotate", root,
        new JsonObject().put("expires", in(Duration.ofDays(30))).put("retire_old_in", "25h")), 400, "invalid_request");
    problem(http.send(HttpMethod.POST, port, "/v1/auth/tokens/" + oldId + "/rotate", root,
        new JsonObject().put("expires", in(Duration.ofDays(30))).put("retire_old_in", "soon")), 400, "invalid_request");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/auth/tokens/" + oldId + "/rotate", root,
        new JsonObject().put("expires", in(Duration.ofDays(60))));
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject fresh = r.bodyAsJsonObject();
    assertEquals("rotating", fresh.getString("name"));
    assertEquals(old.getJsonObject("scope"), fresh.getJsonObject("scope"));
    Instant retire = Instant.parse(fresh.getJsonObject("old").getString("expires"));
    assertTrue(retire.isBefore(Instant.now().plus(Duration.ofHours(24)).plusSeconds(5)) && retire.isAfter(Instant.now().plus(Duration.ofHours(23))),
        "default retirement is 24 h: " + retire);
    assertEquals(200, http.get(port, "/v1/auth/whoami", fresh.getString("token")).statusCode(), "new one works at once");
    JsonObject oldMe = http.get(port, "/v1/auth/whoami", old.getString("token")).bodyAsJsonObject();
    assertEquals(fresh.getJsonObject("old").getString("expires"), oldMe.getString("expires"), "old one works until its retire time");
    JsonObject oldRead = http.get(port, "/v1/auth/tokens/" + oldId, root).bodyAsJsonObject();
    assertEquals(fresh.getString("id"), oldRead.getString("rotated_to"));
    problem(http.send(HttpMethod.POST, port, "/v1/auth/tokens/" + oldId + "/rotate", root,
        new JsonObject().put("expires", in(Duration.ofDays(1)))), 409, "conflict");
    JsonArray events = http.get(port, "/v1/audit?action=token.rotate", root).bodyAsJsonObject().getJsonArray("items");
    assertTrue(events.stream().anyMatch(e -> oldId.equals(((JsonObject) e).getJsonObject("target").getString("id"))));
  }

  @Test
  void mintedTokensHaveTheirOneSpellingLowS() throws Exception {
    for (int i = 0; i < 40; i++) {
      String t = create(root, tokenBody("spelling-" + i, "web", "monitoring", "prod", in(Duration.ofDays(1))))
          .bodyAsJsonObject().getString("token");
      assertTrue(TestJwts.lowS(t), "minted with s <= n/2: " + t);
      assertEquals(200, http.get(port, "/v1/auth/whoami", t).statusCode());
      // a high-S twin of a low-S signature verifies in ECDSA, and must not here (nor the other way round)
      String twin = TestJwts.highLowTwin(t);
      assertIsTheSameSignatureSpeltOtherwise(t, twin, false);
      assertEquals(401, http.get(port, "/v1/auth/whoami", twin).statusCode());
    }
  }

  @Test
  void badCredentialsAre401WithTheRightCode() throws Exception {
    String kid = keys.signingKid();
    PrivateKey real = TestJwts.privateKey(keys);
    String valid = create(root, tokenBody("victim", "web", "monitoring", "prod", in(Duration.ofDays(1)))).bodyAsJsonObject().getString("token");
    String[] parts = valid.split("\\.");
    JsonObject payload = new JsonObject(new String(java.util.Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8));
    String tokenId = payload.getString("jti");
    long exp = Instant.now().plus(Duration.ofHours(1)).getEpochSecond();
    JsonObject es = new JsonObject().put("alg", "ES256").put("kid", kid).put("typ", "JWT");

    // the genuine token is verified (and cached) first: altered copies of it must still be refused
    assertEquals(200, http.get(port, "/v1/auth/whoami", valid).statusCode());
    String sig = parts[2];
    char mid = sig.charAt(40);
    Map<String, String> cases = new LinkedHashMap<>();
    cases.put("not a JWT", "hello");
    cases.put("tampered header", TestJwts.b64(es.copy().put("typ", "jwt")) + "." + parts[1] + "." + sig);
    cases.put("tampered signature", parts[0] + "." + parts[1] + "." + sig.substring(0, 40) + (mid == 'A' ? 'B' : 'A') + sig.substring(41));
    // the same signature bytes spelt differently: one token has one spelling (else each is verified and cached on its own)
    String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char last = sig.charAt(sig.length() - 1);
    cases.put("signature with non-zero unused bits", parts[0] + "." + parts[1] + "." + sig.substring(0, sig.length() - 1)
        + alphabet.charAt(alphabet.indexOf(last) ^ 1));
    cases.put("signature with padding", parts[0] + "." + parts[1] + "." + sig + "==");
    cases.put("signature as DER", TestJwts.derSpelling(valid));
    cases.put("signature with the high-S twin", TestJwts.highLowTwin(valid));
    // positive control: both are valid ES256 signatures of the genuine token's signing input by the
    // replica's own key, so their 401 is for the spelling, not for a signature that does not verify
    assertIsTheSameSignatureSpeltOtherwise(valid, cases.get("signature as DER"), true);
    assertIsTheSameSignatureSpeltOtherwise(valid, cases.get("signature with the high-S twin"), false);
    assertFalse(verifiesAsDer(valid.substring(0, valid.lastIndexOf('.')),
        Base64.getUrlDecoder().decode(cases.get("tampered signature").substring(cases.get("tampered signature").lastIndexOf('.') + 1)),
        publicKeyOf(valid)), "the control can fail: a tampered signature does not verify");
    cases.put("payload with padding", parts[0] + "." + parts[1] + "=." + sig);
    cases.put("truncated signature", parts[0] + "." + parts[1] + "." + sig.substring(0, sig.length() - 2));
    cases.put("payload of another token", parts[0] + "." + TestJwts.b64(payload.copy().put("jti", "tok_0000000000000000000000000")) + "." + sig);
    cases.put("two segments", "abc.def");
    cases.put("tampered payload", parts[0] + "." + TestJwts.b64(payload.copy().put("team", "*").put("srf", "admin")) + "." + parts[2]);
    cases.put("wrong key", TestJwts.es256(TestJwts.strangerKey(), es, TestJwts.claims("meshplane", tokenId, exp)));
    cases.put("unknown kid", TestJwts.es256(real, es.copy().put("kid", "k-not-ours"), TestJwts.claims("meshplane", tokenId, exp)));
    cases.put("alg none", TestJwts.unsigned(TestJwts.claims("meshplane", tokenId, exp), kid));
    cases.put("HS256 keyed with the public key", TestJwts.hs256(keys.publicPems().get(kid).getBytes(StandardCharsets.US_ASCII),
        new JsonObject().put("alg", "HS256").put("kid", kid).put("typ", "JWT"), TestJwts.claims("meshplane", tokenId, exp)));
    cases.put("wrong issuer", TestJwts.es256(real, es, TestJwts.claims("other-mesh", tokenId, exp).put("aud", "meshplane/v1")));
    cases.put("wrong audience", TestJwts.es256(real, es, TestJwts.claims("meshplane", tokenId, exp).put("aud", "panel")));
    cases.put("no expiry", TestJwts.es256(real, es, TestJwts.claims("meshplane", tokenId, exp).put("exp", (Object) null)));
    cases.put("not yet valid", TestJwts.es256(real, es, TestJwts.claims("meshplane", tokenId, exp).put("nbf", exp - 60)));
    for (Map.Entry<String, String> c : cases.entrySet()) {
      HttpResponse<Buffer> r = http.get(port, "/v1/auth/whoami", c.getValue());
      assertEquals(401, r.statusCode(), c.getKey() + ": " + r.bodyAsString());
      problem(r, 401, "unauthenticated");
    }
    problem(http.get(port, "/v1/auth/whoami"), 401, "unauthenticated");
    problem(http.send(http.request(HttpMethod.GET, port, "/v1/auth/whoami").putHeader("Authorization", "Basic YTpi")), 401, "unauthenticated");
    String expired = TestJwts.es256(real, es, TestJwts.claims("meshplane", tokenId, Instant.now().minusSeconds(30).getEpochSecond()));
    problem(http.get(port, "/v1/auth/whoami", expired), 401, "token_expired");
    assertEquals(200, http.get(port, "/v1/auth/whoami", valid).statusCode(), "the genuine token still works");
    String metrics = http.get(port, "/metrics").bodyAsString();
    for (String reason : new String[] {"malformed", "bad_signature", "bad_algorithm", "unknown_key", "wrong_issuer", "wrong_audience", "expired"}) {
      assertTrue(metrics.contains("mesh_auth_failures_total{reason=\"" + reason + "\"}"), reason);
    }
  }

  /**
   * {@code variant} is {@code jwt} with another spelling of the same ECDSA signature, checked with
   * plain JCA against the public key of the kid in the header (read from the replica's keys folder):
   * the header and payload are unchanged, the genuine signature verifies (P1363, r || s), and so does
   * the variant: as ASN.1 DER when {@code der}, else as the high-S twin (r, n - s) with s above n/2,
   * converted to DER here.
   */
  static void assertIsTheSameSignatureSpeltOtherwise(String jwt, String variant, boolean der) throws Exception {
    String signingInput = jwt.substring(0, jwt.lastIndexOf('.'));
    assertEquals(signingInput, variant.substring(0, variant.lastIndexOf('.')), "the same header and payload");
    PublicKey key = publicKeyOf(jwt);
    byte[] genuine = Base64.getUrlDecoder().decode(jwt.substring(jwt.lastIndexOf('.') + 1));
    byte[] spelt = Base64.getUrlDecoder().decode(variant.substring(variant.lastIndexOf('.') + 1));
    assertFalse(Arrays.equals(genuine, spelt), "another spelling");
    Signature p1363 = Signature.getInstance("SHA256withECDSAinP1363Format");
    p1363.initVerify(key);
    p1363.update(signingInput.getBytes(StandardCharsets.US_ASCII));
    assertTrue(p1363.verify(genuine), "the genuine signature verifies: " + jwt);
    if (der) {
      assertEquals(0x30, spelt[0] & 0xff, "a DER SEQUENCE");
      assertTrue(verifiesAsDer(signingInput, spelt, key), "the DER spelling is a valid signature of the same input: " + variant);
    } else {
      assertEquals(64, spelt.length);
      assertEquals(new BigInteger(1, Arrays.copyOfRange(genuine, 0, 32)), new BigInteger(1, Arrays.copyOfRange(spelt, 0, 32)), "the same r");
      BigInteger s = new BigInteger(1, Arrays.copyOfRange(spelt, 32, 64));
      assertTrue(s.compareTo(Jwts.P256_ORDER.shiftRight(1)) > 0, "high S");
      assertEquals(Jwts.P256_ORDER, s.add(new BigInteger(1, Arrays.copyOfRange(genuine, 32, 64))), "s' = n - s");
      assertTrue(verifiesAsDer(signingInput, der(spelt), key), "the high-S twin is a valid signature of the same input: " + variant);
    }
  }

  /** SHA256withECDSA (ASN.1 DER signatures), as JCA verifies any ECDSA signature. */
  static boolean verifiesAsDer(String signingInput, byte[] derSignature, PublicKey key) throws Exception {
    Signature v = Signature.getInstance("SHA256withECDSA");
    v.initVerify(key);
    v.update(signingInput.getBytes(StandardCharsets.US_ASCII));
    try {
      return v.verify(derSignature);
    } catch (java.security.SignatureException e) {
      return false; // not even DER
    }
  }

  /** A P1363 signature (r || s, 32 bytes each) as DER: SEQUENCE { INTEGER r, INTEGER s }, each minimal and positive. */
  static byte[] der(byte[] raw) {
    byte[] r = new BigInteger(1, Arrays.copyOfRange(raw, 0, 32)).toByteArray();
    byte[] s = new BigInteger(1, Arrays.copyOfRange(raw, 32, 64)).toByteArray();
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    out.write(0x30);
    out.write(4 + r.length + s.length);
    out.write(0x02);
    out.write(r.length);
    out.writeBytes(r);
    out.write(0x02);
    out.write(s.length);
    out.writeBytes(s);
    return out.toByteArray();
  }

  /** The public key of the kid in the token's header, from the replica's keys folder ({@code <kid>.public.pem}, SPKI). */
  static PublicKey publicKeyOf(String jwt) throws Exception {
    JsonObject header = new JsonObject(new String(Base64.getUrlDecoder().decode(jwt.substring(0, jwt.indexOf('.'))), StandardCharsets.UTF_8));
    String kid = header.getString("kid");
    assertEquals("ES256", header.getString("alg"));
    String pem = keys.publicPems().get(kid);
    assertNotNull(pem, "the replica's keys folder has " + kid + ".public.pem");
    byte[] spki = Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", ""));
    return KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(spki));
  }

  @Test
  void auditIsNewestFirstFilterableAndPaged() {
    String admin = Tokens.issue(app, "audit-team", "prod", Surface.ADMIN).jwt();
    for (int i = 0; i < 3; i++) create(admin, tokenBody("a" + i, "audit-team", "monitoring", "prod", in(Duration.ofDays(1))));
    JsonObject first = http.get(port, "/v1/audit?limit=2&action=token.create", admin).bodyAsJsonObject();
    JsonArray items = first.getJsonArray("items");
    assertEquals(2, items.size());
    assertTrue(items.getJsonObject(0).getString("at").compareTo(items.getJsonObject(1).getString("at")) >= 0, "newest first");
    JsonObject second = http.get(port, "/v1/audit?limit=2&action=token.create&cursor=" + first.getString("next_cursor"), admin).bodyAsJsonObject();
    assertEquals(1, second.getJsonArray("items").size());
    assertNull(second.getString("next_cursor"));
    JsonObject e = items.getJsonObject(0);
    assertEquals("token", e.getJsonObject("actor").getString("type"));
    assertEquals("success", e.getString("outcome"));
    assertNotNull(e.getString("request_id"));
    assertEquals("127.0.0.1", e.getString("source_ip"));
    assertFalse(http.get(port, "/v1/audit?limit=1000", root).bodyAsString().contains("eyJ"), "no token secret in the audit trail");
    assertEquals(0, http.get(port, "/v1/audit?since=" + in(Duration.ofHours(1)), admin).bodyAsJsonObject().getJsonArray("items").size());
    problem(http.get(port, "/v1/audit?since=yesterday", admin), 400, "invalid_request");
    problem(http.get(port, "/v1/audit?action=DROP%20TABLE", admin), 400, "invalid_request");
  }
}
