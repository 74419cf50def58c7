package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/acl/impact} on a small known mesh (two replicas, real PostgreSQL): a grant removed
 * loses exactly its peers and ports, a grant added gains them, a port added to peers gains only the
 * port; the bound on class pairs refuses before comparing; the caller's scope holds.
 *
 * <p>The mesh (team {@code impact}): web-1, web-2 ({@code tag:web}), db-1 ({@code tag:db}), mon-1
 * ({@code tag:mon}); the stored policy: web -> db tcp/5432 and mon -> * tcp/9100.
 */
@Timeout(300)
class PolicyImpactTest extends PolicyCluster {
  static final JsonObject WEB_DB = grant("tag:web", "tag:db", "tcp/5432");
  static final JsonObject MON_ALL = grant("tag:mon", "*", "tcp/9100");

  @BeforeAll
  static void mesh() {
    enroll("web-1", "impact", "tag:web");
    enroll("web-2", "impact", "tag:web");
    enroll("db-1", "impact", "tag:db");
    enroll("mon-1", "impact", "tag:mon");
    HttpResponse<Buffer> r = put(a, "impact", policy(WEB_DB, MON_ALL), null);
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  @AfterEach
  void bounds() {
    PolicyImpact.maxClassPairs = PolicyImpact.MAX_CLASS_PAIRS;
    PolicyService.evaluating = scope -> { };
  }

  @Test
  void aRemovedGrantLosesExactlyItsPeersAndPorts() {
    AtomicReference<String> thread = new AtomicReference<>();
    PolicyService.evaluating = scope -> thread.set(Thread.currentThread().getName());
    JsonObject r = impact(b, admin, policy(WEB_DB));
    assertTrue(thread.get() != null && !thread.get().contains("eventloop"), "evaluated on " + thread.get());
    assertEquals(4, r.getInteger("nodes"));
    assertEquals(1, r.getLong("current_version"));
    JsonObject lost = r.getJsonObject("peers").getJsonObject("lost");
    // mon-1 loses web-1, web-2, db-1; each of those loses mon-1
    assertEquals(3, lost.getLong("pairs"), r.encode());
    assertEquals(4, lost.getLong("nodes"), r.encode());
    assertEquals(0, r.getJsonObject("peers").getJsonObject("gained").getLong("pairs"));
    for (Object o : lost.getJsonArray("examples")) {
      JsonObject ex = (JsonObject) o;
      assertTrue(Set.of(ex.getJsonObject("node").getString("name"), ex.getJsonObject("peer").getString("name")).contains("mon-1"), ex.encode());
    }
    JsonArray ports = r.getJsonObject("ports").getJsonArray("lost");
    assertEquals(1, ports.size(), ports.encode());
    assertEquals("tcp/9100", ports.getJsonObject(0).getString("port"));
    assertEquals(3, ports.getJsonObject(0).getLong("pairs"), "mon-1 -> web-1, web-2, db-1");
    for (Object o : ports.getJsonObject(0).getJsonArray("examples")) {
      assertEquals("mon-1", ((JsonObject) o).getJsonObject("src").getString("name"));
    }
    assertEquals(0, r.getJsonObject("ports").getJsonArray("gained").size());
    assertEquals(1, http.get(a.coordinatorPort(), acl("impact", "prod"), admin).bodyAsJsonObject().getLong("version"), "nothing saved");
  }

  @Test
  void anAddedGrantGainsExactlyItsPeersAndPorts() {
    JsonObject r = impact(a, admin, policy(WEB_DB, MON_ALL, grant("tag:web", "tag:web", "tcp/8080")));
    JsonObject gained = r.getJsonObject("peers").getJsonObject("gained");
    assertEquals(1, gained.getLong("pairs"), r.encode());
    assertEquals(2, gained.getLong("nodes"));
    JsonObject ex = gained.getJsonArray("examples").getJsonObject(0);
    assertEquals(new TreeSet<>(List.of("web-1", "web-2")),
        new TreeSet<>(List.of(ex.getJsonObject("node").getString("name"), ex.getJsonObject("peer").getString("name"))));
    assertEquals(0, r.getJsonObject("peers").getJsonObject("lost").getLong("pairs"));
    JsonArray ports = r.getJsonObject("ports").getJsonArray("gained");
    assertEquals(1, ports.size(), ports.encode());
    assertEquals("tcp/8080", ports.getJsonObject(0).getString("port"));
    assertEquals(2, ports.getJsonObject(0).getLong("pairs"), "web-1 -> web-2 and web-2 -> web-1");
    assertEquals(0, r.getJsonObject("ports").getJsonArray("lost").size());
  }

  @Test
  void aWidenedPortGainsThePortNotPeers() {
    JsonObject r = impact(a, admin, policy(grant("tag:web", "tag:db", "tcp/5432-5433", "icmp"), grant("tag:mon", "*", "tcp/9100")));
    assertEquals(0, r.getJsonObject("peers").getJsonObject("gained").getLong("pairs"));
    assertEquals(0, r.getJsonObject("peers").getJsonObject("lost").getLong("pairs"));
    List<String> ports = new ArrayList<>();
    for (Object o : r.getJsonObject("ports").getJsonArray("gained")) {
      JsonObject p = (JsonObject) o;
      ports.add(p.getString("port") + "=" + p.getLong("pairs"));
    }
    assertEquals(List.of("icmp=2", "tcp/5433=2"), ports, "web-1 and web-2 -> db-1");
    // the same policy compares as no change at all
    JsonObject same = impact(b, admin, policy(WEB_DB, MON_ALL));
    assertEquals(0, same.getJsonObject("ports").getInteger("gained_count") + same.getJsonObject("ports").getInteger("lost_count"));
  }

  @Test
  void tooManyClassPairsAreRefusedNamingWhatToReduce() {
    PolicyImpact.maxClassPairs = 5; // the mesh has 3 classes (web, db, mon): 6 pairs
    HttpResponse<Buffer> r = send(a, admin, "impact", new JsonObject().put("policy", policy(WEB_DB)));
    assertEquals(400, r.statusCode(), r.bodyAsString());
    JsonObject error = r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0);
    assertEquals("/policy/grants", error.getString("field"));
    assertTrue(error.getString("message").contains("3 classes") && error.getString("message").contains("select nodes by shared tags"),
        error.encode());
    // the candidate is validated first, its errors under /policy; an unknown field is named
    r = send(a, admin, "impact", new JsonObject().put("policy", policy(grant("tag:web", "tag:db", "tcp/0"))));
    assertEquals(400, r.statusCode());
    assertEquals("/policy/grants/0/ports/0", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    r = send(a, admin, "impact", new JsonObject().put("policy", policy(WEB_DB)).put("node", "web-1"));
    assertEquals(400, r.statusCode());
    assertEquals("/node", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
  }

  @Test
  void aTeamScopedTokenSeesOnlyItsOwnTeam() {
    String mine = Tokens.issue(a, "impact", "prod", Surface.MONITORING).jwt();
    String other = Tokens.issue(a, "elsewhere", "prod", Surface.MONITORING).jwt();
    // its own team without naming it
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/impact", mine,
        new JsonObject().put("policy", policy(WEB_DB)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(3, r.bodyAsJsonObject().getJsonObject("peers").getJsonObject("lost").getLong("pairs"));
    // another team's policy does not exist for it
    r = send(a, other, "impact", new JsonObject().put("policy", policy(WEB_DB)));
    assertEquals(404, r.statusCode(), r.bodyAsString());
    // an unknown query parameter is named
    r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/acl/impact?team=impact&environment=prod&nodes=1", admin,
        new JsonObject().put("policy", policy(WEB_DB)));
    assertEquals(400, r.statusCode(), r.bodyAsString());
    assertFalse(r.bodyAsString().isEmpty());
  }

  static JsonObject policy(JsonObject... grants) {
    return new JsonObject().put("grants", new JsonArray(List.of((Object[]) grants)));
  }

  static HttpResponse<Buffer> send(Meshplane via, String token, String team, JsonObject body) {
    return http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/acl/impact?team=" + team + "&environment=prod", token, body);
  }

  static JsonObject impact(Meshplane via, String token, JsonObject candidate) {
    HttpResponse<Buffer> r = send(via, token, "impact", new JsonObject().put("policy", candidate));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }
}
