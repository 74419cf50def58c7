package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
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
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The policy's worked example, written out by hand: four tags, six nodes, five grants (one with
 * {@code *}, one with an off-mesh prefix), and what each node is told (peers, inbound rules,
 * acl_matches) — then the same after a re-tag, a policy change, an enrollment and a deletion, with the
 * versions of the nodes each change does not concern left alone. Agents beat through two real
 * replicas in turn.
 */
@Timeout(240)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PolicyWorkedExampleTest {
  static final String TEAM = "acme";
  static final String ENV = "prod";
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;
  static final Map<String, Nodes.Enrolled> nodes = new LinkedHashMap<>();
  static final Map<String, String> address = new HashMap<>();
  /** What each agent holds: its versions. */
  static final Map<String, long[]> known = new HashMap<>();
  static int turn;

  static final JsonObject POLICY = new JsonObject().put("grants", new JsonArray()
      .add(grant(List.of("tag:web"), List.of("tag:db"), List.of("tcp/5432")))
      .add(grant(List.of("tag:mon"), List.of("*"), List.of("tcp/9100")))
      .add(grant(List.of("bastion"), List.of("tag:web", "tag:db"), List.of("tcp/22")))
      .add(grant(List.of("10.20.0.0/16"), List.of("tag:web"), List.of("tcp/443", "tcp/8000-8100")))
      .add(grant(List.of("tag:db"), List.of("tag:db"), List.of("tcp/5433"))));

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("writebehind.flush_interval", "100ms"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    admin = cluster.admin();
    enroll("web-1", "tag:web");
    enroll("web-2", "tag:web");
    enroll("db-1", "tag:db");
    enroll("db-2", "tag:db");
    enroll("mon-1", "tag:mon");
    enroll("bastion", "tag:bastion");
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=acme&environment=prod", admin, POLICY);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(1, r.bodyAsJsonObject().getLong("version"));
    for (String n : nodes.keySet()) known.put(n, new long[] {0, 0});
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  @Order(1)
  void everyNodeIsToldExactlyItsPeersRulesAndMatches() {
    Map<String, JsonObject> answers = syncAll();
    settle(); // first heartbeats make nodes online: their peers hear it as deltas
    assertPeers(answers, "web-1", "db-1", "db-2", "mon-1", "bastion");
    assertPeers(answers, "web-2", "db-1", "db-2", "mon-1", "bastion");
    assertPeers(answers, "db-1", "web-1", "web-2", "db-2", "mon-1", "bastion");
    assertPeers(answers, "db-2", "web-1", "web-2", "db-1", "mon-1", "bastion");
    assertPeers(answers, "mon-1", "web-1", "web-2", "db-1", "db-2", "bastion");
    assertPeers(answers, "bastion", "web-1", "web-2", "db-1", "db-2", "mon-1");

    assertRules(answers, "web-1", rule(List.of(a32("mon-1")), "tcp/9100"), rule(List.of(a32("bastion")), "tcp/22"),
        rule(List.of("10.20.0.0/16"), "tcp/443", "tcp/8000-8100"));
    assertRules(answers, "db-1", rule(sorted(a32("web-1"), a32("web-2")), "tcp/5432"), rule(List.of(a32("mon-1")), "tcp/9100"),
        rule(List.of(a32("bastion")), "tcp/22"), rule(sorted(a32("db-1"), a32("db-2")), "tcp/5433"));
    assertRules(answers, "mon-1", rule(List.of(a32("mon-1")), "tcp/9100"));
    assertRules(answers, "bastion", rule(List.of(a32("mon-1")), "tcp/9100"));

    assertMatches("web-1", "grant 0: tag:web -> tag:db tcp/5432 (source)", "grant 1: tag:mon -> * tcp/9100 (destination)",
        "grant 2: bastion -> tag:web, tag:db tcp/22 (destination)", "grant 3: 10.20.0.0/16 -> tag:web tcp/443, tcp/8000-8100 (destination)");
    assertMatches("db-2", "grant 0: tag:web -> tag:db tcp/5432 (destination)", "grant 1: tag:mon -> * tcp/9100 (destination)",
        "grant 2: bastion -> tag:web, tag:db tcp/22 (destination)", "grant 4: tag:db -> tag:db tcp/5433 (source, destination)");
    assertMatches("mon-1", "grant 1: tag:mon -> * tcp/9100 (source, destination)");
    assertMatches("bastion", "grant 1: tag:mon -> * tcp/9100 (destination)", "grant 2: bastion -> tag:web, tag:db tcp/22 (source)");

    // a peer entry carries what the contract says
    JsonObject entry = held.get("web-1").get(nodes.get("db-1").id());
    assertEquals(Set.of("id", "name", "address", "public_key", "endpoints", "relay", "online"), entry.fieldNames());
    assertEquals(nodes.get("db-1").id(), entry.getString("id"));
    assertEquals(address.get("db-1") + "/32", entry.getString("address"));
    assertTrue(entry.getBoolean("online"), "db-1 has beaten: online");

    // current agents are answered unchanged, on either replica, for both blocks
    for (String n : nodes.keySet()) {
      JsonObject again = beat(n, known.get(n), turn++ % 2 == 0 ? a : b);
      assertEquals(true, again.getJsonObject("peers").getBoolean("unchanged"), n + ": " + again.encode());
      assertEquals(true, again.getJsonObject("acl").getBoolean("unchanged"), n + ": " + again.encode());
      assertEquals(known.get(n)[0], again.getJsonObject("peers").getLong("version"));
    }
    // the node record says so
    JsonObject record = http.get(b.coordinatorPort(), "/v1/nodes/" + nodes.get("db-1").id(), admin).bodyAsJsonObject();
    assertEquals("current", record.getJsonObject("policy_sync").getString("state"), record.encode());
  }

  @Test
  @Order(2)
  void aRetagMovesOneNodeAndLeavesTheUnconcernedAlone() {
    settle();
    Map<String, long[]> before = copy(known);
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, b.coordinatorPort(), "/v1/nodes/" + nodes.get("web-2").id() + "/tags", admin,
        new JsonObject().put("tags", new JsonArray().add("tag:db")));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(new JsonArray().add("tag:db"), r.bodyAsJsonObject().getJsonArray("tags"));
    assertEquals(new JsonArray().add("grant 0: tag:web -> tag:db tcp/5432 (destination)").add("grant 1: tag:mon -> * tcp/9100 (destination)")
        .add("grant 2: bastion -> tag:web, tag:db tcp/22 (destination)").add("grant 4: tag:db -> tag:db tcp/5433 (source, destination)"),
        r.bodyAsJsonObject().getJsonArray("acl_matches"), "acl_matches are current in the answer");
    Map<String, JsonObject> answers = syncAll();
    // web-2 is a db now: web-1 gains it as a peer; db-1's peers are the same set (web-2 is now its db peer)
    assertPeers(answers, "web-1", "db-1", "db-2", "web-2", "mon-1", "bastion");
    assertPeers(answers, "web-2", "web-1", "db-1", "db-2", "mon-1", "bastion");
    assertEquals(before.get("db-1")[0], known.get("db-1")[0], "db-1's peers did not change: same version");
    assertNotEquals(before.get("db-1")[1], known.get("db-1")[1], "db-1's rules did change (sources of grants 0 and 4)");
    assertRules(answers, "db-1", rule(List.of(a32("web-1")), "tcp/5432"), rule(List.of(a32("mon-1")), "tcp/9100"),
        rule(List.of(a32("bastion")), "tcp/22"), rule(sorted(a32("db-1"), a32("db-2"), a32("web-2")), "tcp/5433"));
    for (String n : List.of("mon-1", "bastion")) {
      assertEquals(before.get(n)[0], known.get(n)[0], n + " keeps its peers version");
      assertEquals(before.get(n)[1], known.get(n)[1], n + " keeps its acl version");
      assertTrue(answers.get(n).getJsonObject("peers").getBoolean("unchanged", false), n + ": " + answers.get(n).encode());
    }
    assertNotEquals(before.get("web-1")[0], known.get("web-1")[0]);
  }

  @Test
  @Order(3)
  void aPolicyChangeRecomputesOnlyWhatItChanges() {
    settle();
    Map<String, long[]> before = copy(known);
    JsonObject next = POLICY.copy();
    next.getJsonArray("grants").remove(3); // the office prefix -> tag:web; grant 4 becomes grant 3
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, b.coordinatorPort(), "/v1/acl?team=acme&environment=prod", admin, next);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    Map<String, JsonObject> answers = syncAll();
    assertRules(answers, "web-1", rule(List.of(a32("mon-1")), "tcp/9100"), rule(List.of(a32("bastion")), "tcp/22"));
    assertNotEquals(before.get("web-1")[1], known.get("web-1")[1]);
    for (String n : List.of("web-2", "db-1", "db-2", "mon-1", "bastion")) {
      assertArrayEquals(before.get(n), known.get(n), n + " is not concerned by the change: its versions stay");
    }
    assertMatches("db-1", "grant 0: tag:web -> tag:db tcp/5432 (destination)", "grant 1: tag:mon -> * tcp/9100 (destination)",
        "grant 2: bastion -> tag:web, tag:db tcp/22 (destination)", "grant 3: tag:db -> tag:db tcp/5433 (source, destination)");
  }

  @Test
  @Order(4)
  void anEnrollmentReachesItsPeersAsADeltaOfOne() {
    settle();
    Map<String, long[]> before = copy(known);
    enroll("web-3", "tag:web");
    known.put("web-3", new long[] {0, 0});
    Map<String, JsonObject> answers = syncAll();
    assertPeers(answers, "web-3", "db-1", "db-2", "web-2", "mon-1", "bastion");
    for (String n : List.of("db-1", "db-2", "web-2", "mon-1", "bastion")) {
      JsonObject peers = answers.get(n).getJsonObject("peers");
      assertEquals(List.of(nodes.get("web-3").id()), ids(peers.getJsonArray("changed")), n + ": " + peers.encode());
      assertEquals(new JsonArray(), peers.getJsonArray("removed"));
    }
    assertArrayEquals(before.get("web-1"), known.get("web-1"), "web-1 does not peer with web-3: nothing changes for it");
    settle(); // web-3's first heartbeat: online
    assertTrue(held.get("db-1").get(nodes.get("web-3").id()).getBoolean("online"));
  }

  @Test
  @Order(5)
  void aDeletionReachesItsPeersAsARemoval() {
    settle();
    HttpResponse<Buffer> r = http.send(HttpMethod.DELETE, a.coordinatorPort(), "/v1/nodes/" + nodes.get("mon-1").id(), admin, null);
    assertEquals(204, r.statusCode(), r.bodyAsString());
    String gone = nodes.remove("mon-1").id();
    known.remove("mon-1");
    Map<String, JsonObject> answers = syncAll();
    for (String n : nodes.keySet()) {
      JsonObject peers = answers.get(n).getJsonObject("peers");
      assertEquals(new JsonArray().add(gone), peers.getJsonArray("removed"), n + ": " + peers.encode());
      assertEquals(new JsonArray(), peers.getJsonArray("changed"), n);
    }
    assertRules(answers, "web-1", rule(List.of(a32("bastion")), "tcp/22"));
    assertRules(answers, "bastion");
  }

  @Test
  @Order(6)
  void anEndpointChangeIsADeltaOfOneEntryAndATooOldVersionGetsTheFullSet() {
    settle();
    Map<String, long[]> before = copy(known);
    beatWith("db-2", new JsonObject().put("endpoints", new JsonArray().add("203.0.113.9:41641")), a);
    // the write-behind flushes it (100 ms), the change log carries it to both replicas
    JsonObject peers = Await.until("web-1's answer carries the change", 10_000,
        () -> beat("web-1", known.get("web-1"), b).getJsonObject("peers"), p -> !p.getBoolean("unchanged", false));
    assertEquals(List.of(nodes.get("db-2").id()), ids(peers.getJsonArray("changed")), peers.encode());
    assertEquals(new JsonArray().add("203.0.113.9:41641"), peers.getJsonArray("changed").getJsonObject(0).getJsonArray("endpoints"));
    assertTrue(peers.encode().length() < 1024, "a delta is sized by the change: " + peers.encode().length());
    known.get("web-1")[0] = peers.getLong("version");
    // an agent with no peers yet (known 0: a fresh start) gets the full set; one older than what its
    // class's log holds does too (PeerModelTest.anAgentOlderThanTheClassLogGetsTheFullSet: it takes
    // more than 1,024 changes of one class). An old version the log still covers is a delta of the net
    // changes since then, policy changes included (their peers gained and lost are logged too)
    JsonObject full = beat("web-1", new long[] {0, known.get("web-1")[1]}, a).getJsonObject("peers");
    assertTrue(full.containsKey("items"), full.encode());
    assertEquals(4, full.getJsonArray("items").size(), full.encode());
    JsonObject old = beat("web-1", new long[] {1, known.get("web-1")[1]}, a).getJsonObject("peers");
    assertEquals(ids(full.getJsonArray("items")).stream().sorted().toList(), ids(old.getJsonArray("changed")).stream().sorted().toList(),
        "from version 1 the delta carries every current peer: " + old.encode());
    assertEquals(before.keySet(), known.keySet());
  }

  // ---- helpers ----

  static JsonObject grant(List<String> src, List<String> dst, List<String> ports) {
    return new JsonObject().put("src", new JsonArray(src)).put("dst", new JsonArray(dst)).put("ports", new JsonArray(ports));
  }

  static void enroll(String name, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", TEAM).put("environment", ENV)
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    nodes.put(name, new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node")));
    String addr = j.getJsonObject("node").getString("address");
    address.put(name, addr.substring(0, addr.indexOf('/')));
  }

  static String a32(String name) {
    return address.get(name) + "/32";
  }

  static List<String> sorted(String... addresses) {
    List<String> out = new ArrayList<>(List.of(addresses));
    out.sort((x, y) -> Long.compare(num(x), num(y)));
    return out;
  }

  static long num(String cidr) {
    String[] p = cidr.substring(0, cidr.indexOf('/')).split("\\.");
    return (Long.parseLong(p[0]) << 24) | (Long.parseLong(p[1]) << 16) | (Long.parseLong(p[2]) << 8) | Long.parseLong(p[3]);
  }

  static JsonObject rule(List<String> src, String... ports) {
    return new JsonObject().put("src", new JsonArray(src)).put("ports", new JsonArray(List.of(ports)));
  }

  static JsonObject beat(String name, long[] versions, Meshplane via) {
    return beatWith(name, new JsonObject().put("known", new JsonObject().put("peers", versions[0]).put("acl", versions[1])), via);
  }

  static JsonObject beatWith(String name, JsonObject body, Meshplane via) {
    Nodes.Enrolled n = nodes.get(name);
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /**
   * Every agent beats (alternating replicas) until both replicas' models have applied the latest
   * change, and keeps what it was told; returns each node's last answer that was not all-unchanged
   * (or its unchanged answer), with the peer sets each agent now holds in {@link #held}.
   */
  static Map<String, JsonObject> syncAll() {
    awaitModels();
    Map<String, JsonObject> out = new HashMap<>();
    for (String n : nodes.keySet()) {
      JsonObject answer = beat(n, known.get(n), turn++ % 2 == 0 ? a : b);
      apply(n, answer);
      out.put(n, answer);
    }
    return out;
  }

  /** Beats until every agent is answered unchanged (pending live changes, such as first heartbeats, have reached everyone). */
  static void settle() {
    // quiet three times in a row, each round after a whole write-behind flush on both replicas (what the
    // previous round's heartbeats changed is in the change log) and both models applied the log
    int quietRounds = 0;
    for (int round = 0; round < 50; round++) {
      Metrics.awaitFlushes(http, 2, a.coordinatorPort(), b.coordinatorPort());
      boolean quiet = true;
      for (JsonObject answer : syncAll().values()) {
        quiet &= answer.getJsonObject("peers").getBoolean("unchanged", false) && answer.getJsonObject("acl").getBoolean("unchanged", false);
      }
      quietRounds = quiet ? quietRounds + 1 : 0;
      if (quietRounds == 3) return;
    }
    throw new AssertionError("the mesh did not settle");
  }

  /** The peers each agent holds, by node name: full sets and deltas applied as an agent would. */
  static final Map<String, Map<String, JsonObject>> held = new HashMap<>();
  static final Map<String, JsonArray> rules = new HashMap<>();

  static void apply(String n, JsonObject answer) {
    JsonObject peers = answer.getJsonObject("peers");
    Map<String, JsonObject> mine = held.computeIfAbsent(n, k -> new HashMap<>());
    long[] v = known.get(n);
    if (peers.containsKey("items")) {
      mine.clear();
      for (Object o : peers.getJsonArray("items")) mine.put(((JsonObject) o).getString("id"), (JsonObject) o);
    } else if (peers.containsKey("changed")) {
      for (Object o : peers.getJsonArray("changed")) mine.put(((JsonObject) o).getString("id"), (JsonObject) o);
      for (Object o : peers.getJsonArray("removed")) mine.remove((String) o);
    }
    assertTrue(peers.getLong("version") >= v[0], n + ": a version never goes backwards");
    v[0] = peers.getLong("version");
    JsonObject acl = answer.getJsonObject("acl");
    if (acl.containsKey("rules")) rules.put(n, acl.getJsonArray("rules"));
    assertTrue(acl.getLong("version") >= v[1], n + ": a version never goes backwards");
    v[1] = acl.getLong("version");
  }

  static void awaitModels() {
    cluster.awaitChangesApplied();
  }

  static void assertPeers(Map<String, JsonObject> answers, String node, String... peers) {
    Set<String> expected = new TreeSet<>();
    for (String p : peers) expected.add(nodes.get(p).id());
    assertEquals(expected, new TreeSet<>(held.get(node).keySet()), node + " holds exactly its peers");
  }

  static void assertRules(Map<String, JsonObject> answers, String node, JsonObject... expected) {
    assertEquals(new JsonArray(List.of((Object[]) expected)), rules.get(node), node + "'s inbound rules");
  }

  static void assertMatches(String node, String... matches) {
    JsonObject r = http.get(a.coordinatorPort(), "/v1/nodes/" + nodes.get(node).id(), admin).bodyAsJsonObject();
    assertEquals(new JsonArray(List.of((Object[]) matches)), r.getJsonArray("acl_matches"), node);
  }

  static JsonArray items(JsonObject answer) {
    return answer.getJsonObject("peers").getJsonArray("items");
  }

  static List<String> ids(JsonArray entries) {
    List<String> out = new ArrayList<>();
    for (Object o : entries) out.add(((JsonObject) o).getString("id"));
    return out;
  }

  static Map<String, long[]> copy(Map<String, long[]> m) {
    Map<String, long[]> out = new HashMap<>();
    m.forEach((k, v) -> out.put(k, v.clone()));
    return out;
  }

  static void assertArrayEquals(long[] x, long[] y, String message) {
    assertEquals(List.of(x[0], x[1]), List.of(y[0], y[1]), message);
  }

  static {
    assertFalse(POLICY.isEmpty());
  }
}
