package io.meshplane.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.hazelcast.core.EntryAdapter;
import com.hazelcast.core.EntryEvent;
import com.hazelcast.replicatedmap.ReplicatedMap;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Revocation and rotation across replicas: what one replica decides, every replica enforces within a second. */
@Timeout(240)
class RevocationClusterTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String root;

  @BeforeAll
  static void start() {
    cluster = TestCluster.of(3);
    a = cluster.start(0);
    b = cluster.start(1);
    http = cluster.http();
    root = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static JsonObject create(Meshplane on, String name) {
    JsonObject body = new JsonObject().put("name", name)
        .put("scope", new JsonObject().put("team", "web").put("surface", "monitoring").put("environment", "prod"))
        .put("expires", Instant.now().plus(Duration.ofDays(1)).toString());
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, on.coordinatorPort(), "/v1/auth/tokens", root, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Milliseconds until {@code on} answers the token with {@code code}; fails after {@code limitMs}. */
  static long millisUntil(Meshplane on, String token, String code, long limitMs) {
    long t0 = System.nanoTime();
    Await.until(on.coordinatorPort() + " answers " + code, limitMs, () -> http.get(on.coordinatorPort(), "/v1/auth/whoami", token),
        r -> r.statusCode() == 401 && code.equals(r.bodyAsJsonObject().getString("code")));
    return (System.nanoTime() - t0) / 1_000_000;
  }

  @Test
  void aTokenRevokedOnOneReplicaIsRejectedByEveryReplicaWithinASecondIncludingOneStartedLater() throws Exception {
    JsonObject t = create(a, "revoke-me");
    String token = t.getString("token");
    // both replicas have verified (and cached) it
    assertEquals(200, http.get(a.coordinatorPort(), "/v1/auth/whoami", token).statusCode());
    assertEquals(200, http.get(b.coordinatorPort(), "/v1/auth/whoami", token).statusCode());

    assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/auth/tokens/" + t.getString("id"), root, null).statusCode());
    long onB = millisUntil(b, token, "token_revoked", 1000);
    System.out.println("revocation visible on the other replica after " + onB + " ms");
    assertEquals(401, http.get(a.coordinatorPort(), "/v1/auth/whoami", token).statusCode());

    Meshplane c = cluster.start(2);
    assertEquals(3, c.hazelcast().getCluster().getMembers().size());
    HttpResponse<Buffer> r = http.get(c.coordinatorPort(), "/v1/auth/whoami", token);
    assertEquals(401, r.statusCode());
    assertEquals("token_revoked", r.bodyAsJsonObject().getString("code"), "a replica started after the revocation knows it at once");
  }

  @Test
  void rotationOldTokenWorksUntilItsRetireTimeOnEveryReplicaAndTheNewOneAtOnce() throws Exception {
    JsonObject old = create(a, "rotate-me");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/auth/tokens/" + old.getString("id") + "/rotate", root,
        new JsonObject().put("expires", Instant.now().plus(Duration.ofDays(2)).toString()).put("retire_old_in", "3s"));
    assertEquals(201, r.statusCode(), r.bodyAsString());
    String fresh = r.bodyAsJsonObject().getString("token");
    Instant retire = Instant.parse(r.bodyAsJsonObject().getJsonObject("old").getString("expires"));
    assertEquals(200, http.get(b.coordinatorPort(), "/v1/auth/whoami", fresh).statusCode(), "the new token works on another replica at once");
    assertEquals(200, http.get(b.coordinatorPort(), "/v1/auth/whoami", old.getString("token")).statusCode(), "the old one still works");
    assertTrue(Instant.now().isBefore(retire));
    long waitMs = Duration.between(Instant.now(), retire).toMillis();
    long onB = millisUntil(b, old.getString("token"), "token_expired", waitMs + 1000);
    assertTrue(onB >= waitMs - 200, "not retired early: " + onB + " ms vs " + waitMs);
    assertEquals("token_expired", http.get(a.coordinatorPort(), "/v1/auth/whoami", old.getString("token")).bodyAsJsonObject().getString("code"));
    assertEquals(200, http.get(a.coordinatorPort(), "/v1/auth/whoami", fresh).statusCode());
  }

  /**
   * Puts run in no fixed order, so a rotation's "retired" entry can land after a revocation of the same
   * token (or a member can copy a stale snapshot). A revocation must never be lifted by that: every
   * replica keeps refusing the token, and the reconciliation puts the database's revocation back.
   */
  @Test
  void aRetirementThatLandsAfterARevocationDoesNotLiftIt() throws Exception {
    JsonObject t = create(a, "revoked-then-retired");
    String id = t.getString("id");
    String token = t.getString("token");
    assertEquals(200, http.get(b.coordinatorPort(), "/v1/auth/whoami", token).statusCode());
    assertEquals(204, http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/auth/tokens/" + id, root, null).statusCode());
    millisUntil(b, token, "token_revoked", 1000);

    // the late, laxer put: retired an hour from now, written straight into the cluster's map
    // (listeners of the test, registered after the mirrors' own, tell when the entry event reached each member)
    ReplicatedMap<String, String> denied = b.hazelcast().getReplicatedMap(Denylist.MAP);
    AtomicInteger reached = new AtomicInteger();
    Map<ReplicatedMap<String, String>, UUID> listeners = new HashMap<>();
    for (Meshplane on : new Meshplane[] {a, b}) {
      ReplicatedMap<String, String> map = on.hazelcast().getReplicatedMap(Denylist.MAP);
      listeners.put(map, map.addEntryListener(new EntryAdapter<>() {
        @Override
        public void onEntryEvent(EntryEvent<String, String> event) {
          if (event.getValue() != null && event.getValue().startsWith("retired")) reached.incrementAndGet();
        }
      }, id));
    }
    denied.put(id, "retired:" + Instant.now().plus(Duration.ofHours(1)).toEpochMilli());
    Await.until("the retirement's entry event reached both members", 2000, () -> reached.get() >= 2);
    listeners.forEach(ReplicatedMap::removeEntryListener);
    for (Meshplane on : new Meshplane[] {a, b}) {
      HttpResponse<Buffer> r = http.get(on.coordinatorPort(), "/v1/auth/whoami", token);
      assertEquals(401, r.statusCode(), r.bodyAsString());
      assertEquals("token_revoked", r.bodyAsJsonObject().getString("code"));
    }

    a.auth().tokens().reconcileDenylist().await(10, TimeUnit.SECONDS);
    Await.until("the reconciliation restores what PostgreSQL says", 2000, () -> denied.get(id), v -> v.startsWith("revoked"));
  }
}
