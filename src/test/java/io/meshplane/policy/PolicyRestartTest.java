package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A restart of the whole cluster: the peer model comes back from PostgreSQL (a snapshot consistent
 * with the change log's clock), agents keep what they hold, and no version they were given goes
 * backwards: an agent whose version is older than the snapshot gets its unchanged content once in
 * full, under a newer version, and is answered unchanged from then on.
 */
@Timeout(240)
class PolicyRestartTest {
  static TestCluster cluster;
  static Http http;

  @BeforeAll
  static void start() {
    cluster = TestCluster.of(2);
    cluster.start(0, Map.of("writebehind.flush_interval", "100ms"));
    http = cluster.http();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, long peers, long acl) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("known", new JsonObject().put("peers", peers).put("acl", acl)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static List<String> ids(JsonObject peers) {
    List<String> out = new ArrayList<>();
    for (Object o : peers.getJsonArray("items")) out.add(((JsonObject) o).getString("id"));
    return out;
  }

  @Test
  void afterAFullRestartNoVersionGoesBackAndAgentsKeepTheirPeers() throws Exception {
    Meshplane first = cluster.replica(0);
    String admin = cluster.admin();
    Nodes.Enrolled a = Nodes.enroll(http, first.coordinatorPort(), admin, "a", "restart", "prod");
    Nodes.Enrolled b = Nodes.enroll(http, first.coordinatorPort(), admin, "b", "restart", "prod");
    JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("*"))
        .put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("tcp/22"))));
    assertEquals(200, http.send(HttpMethod.PUT, first.coordinatorPort(), "/v1/acl?team=restart&environment=prod", admin, policy)
        .statusCode());
    beat(first, a, 0, 0);
    beat(first, b, 0, 0);
    // both first heartbeats flushed (a whole flush after them) and applied: a and b are online for each other
    Metrics.awaitFlushes(http, 2, first.coordinatorPort());
    cluster.awaitChangesApplied();
    JsonObject held = beat(first, a, 0, 0);
    long peers = held.getJsonObject("peers").getLong("version");
    long acl = held.getJsonObject("acl").getLong("version");
    assertEquals(List.of(b.id()), ids(held.getJsonObject("peers")));

    first.close();
    Meshplane second = cluster.start(1, Map.of("writebehind.flush_interval", "100ms"));

    JsonObject after = beat(second, a, peers, acl);
    JsonObject p = after.getJsonObject("peers");
    assertTrue(p.getLong("version") >= peers, "never an older version: " + peers + " -> " + p.encode());
    if (!p.getBoolean("unchanged", false)) {
      assertEquals(List.of(b.id()), ids(p), "the same peers, in full under the snapshot's version");
    }
    assertTrue(after.getJsonObject("acl").getLong("version") >= acl);
    JsonObject again = beat(second, a, p.getLong("version"), after.getJsonObject("acl").getLong("version"));
    assertEquals(true, again.getJsonObject("peers").getBoolean("unchanged"), again.encode());
    assertEquals(true, again.getJsonObject("acl").getBoolean("unchanged"), again.encode());
    JsonObject record = http.get(second.coordinatorPort(), "/v1/nodes/" + a.id(), admin).bodyAsJsonObject();
    assertEquals(new JsonArray().add("grant 0: * -> * tcp/22 (source, destination)"), record.getJsonArray("acl_matches"));
  }
}
