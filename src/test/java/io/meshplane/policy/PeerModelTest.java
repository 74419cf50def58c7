package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.node.NodeFacts;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The peer model on its own (no HTTP, no database): what the change log's entries do to answers. */
class PeerModelTest {
  static final PolicyDocument STAR = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray().add(new JsonObject()
      .put("src", new JsonArray().add("*")).put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*")))));

  static NodeFacts node(String id, String name, int last) {
    return new NodeFacts(id, "t", "e", name, PeerModel.address("100.64.0." + last), "key-" + name, new String[] {"tag:x"}, "fra1",
        new String[0], true);
  }

  static JsonObject answer(PeerModel m, String id, long peers, long acl) {
    Buffer out = Buffer.buffer().appendString("{");
    m.answer(id, peers, acl, out);
    return new JsonObject(out.appendString("}").toString());
  }

  @Test
  void aRelayMoveReachesTheNodeItselfAndItsPeersAsADelta() {
    PeerModel m = new PeerModel();
    m.load(10, List.of(node("nd_a", "a", 1), node("nd_b", "b", 2)), Map.of("t/e", STAR), Map.of("t/e", 1L));
    JsonObject before = answer(m, "nd_b", 0, 0);
    assertEquals("fra1", answer(m, "nd_a", 0, 0).getString("relay"));
    m.live(11, "nd_a", null, null, null, "ams1");
    assertEquals("ams1", answer(m, "nd_a", 10, 10).getString("relay"), "the node's own answer names its new relay");
    JsonObject delta = answer(m, "nd_b", before.getJsonObject("peers").getLong("version"), 10).getJsonObject("peers");
    assertEquals(11, delta.getLong("version"));
    assertEquals("ams1", delta.getJsonArray("changed").getJsonObject(0).getString("relay"), delta.encode());
  }

  @Test
  void aReloadSwapsTheWholeModelAndNeverShowsAnEmptyMesh() {
    PeerModel m = new PeerModel();
    m.load(5, List.of(node("nd_a", "a", 1), node("nd_b", "b", 2)), Map.of("t/e", STAR), Map.of("t/e", 1L));
    m.load(9, List.of(node("nd_a", "a", 1), node("nd_b", "b", 2), node("nd_c", "c", 3)), Map.of("t/e", STAR), Map.of("t/e", 1L));
    JsonObject peers = answer(m, "nd_a", 5, 5).getJsonObject("peers");
    assertEquals(9, peers.getLong("version"), "after a snapshot load every version is the snapshot's");
    assertTrue(peers.containsKey("items"), "an agent known below the snapshot gets the full set: " + peers.encode());
    assertEquals(2, peers.getJsonArray("items").size());
  }

  @Test
  void anAgentAheadOfThisReplicaIsAnsweredUnchangedUnderItsOwnVersion() {
    PeerModel m = new PeerModel();
    m.load(5, List.of(node("nd_a", "a", 1), node("nd_b", "b", 2)), Map.of("t/e", STAR), Map.of("t/e", 1L));
    JsonObject a = answer(m, "nd_a", 42, 43);
    assertEquals(new JsonObject().put("version", 42).put("unchanged", true), a.getJsonObject("peers"));
    assertEquals(new JsonObject().put("version", 43).put("unchanged", true), a.getJsonObject("acl"));
    JsonObject unknown = answer(m, "nd_zz", 7, 0);
    assertEquals(new JsonObject().put("version", 7).put("unchanged", true), unknown.getJsonObject("peers"),
        "a node this replica does not know yet keeps what it holds");
  }

  static NodeFacts tagged(String id, int last, String tag) {
    return new NodeFacts(id, "t", "e", id.substring(3), PeerModel.address("100.64.0." + last), "key-" + id, new String[] {tag}, "fra1",
        new String[0], true);
  }

  static PolicyDocument grants(String... srcDst) {
    JsonArray list = new JsonArray();
    for (int i = 0; i < srcDst.length; i += 2) {
      list.add(new JsonObject().put("src", new JsonArray().add(srcDst[i])).put("dst", new JsonArray().add(srcDst[i + 1]))
          .put("ports", new JsonArray().add("tcp/5432")));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", list));
  }

  /**
   * A policy change answers each class with what it changed for it: a delta of the peers gained
   * (changed) and lost (removed), not the whole set; a class whose peers it does not change keeps its
   * version (unchanged).
   */
  @Test
  void aPolicyChangeIsADeltaOfThePeersGainedAndLost() {
    PeerModel m = new PeerModel();
    m.load(10, List.of(tagged("nd_web", 1, "tag:web"), tagged("nd_db", 2, "tag:db"), tagged("nd_mon", 3, "tag:mon")),
        Map.of("t/e", grants("tag:web", "tag:db")), Map.of("t/e", 1L));
    long web0 = answer(m, "nd_web", 0, 0).getJsonObject("peers").getLong("version");
    long db0 = answer(m, "nd_db", 0, 0).getJsonObject("peers").getLong("version");
    long mon0 = answer(m, "nd_mon", 0, 0).getJsonObject("peers").getLong("version");

    // mon may now reach db: db gains mon, mon gains db, web is not concerned
    m.policy(11, "t", "e", 2, grants("tag:web", "tag:db", "tag:mon", "tag:db"));
    JsonObject db = answer(m, "nd_db", db0, 0).getJsonObject("peers");
    assertEquals(11, db.getLong("version"), db.encode());
    assertEquals(List.of("nd_mon"), ids(db.getJsonArray("changed")), db.encode());
    assertEquals(new JsonArray(), db.getJsonArray("removed"), db.encode());
    JsonObject mon = answer(m, "nd_mon", mon0, 0).getJsonObject("peers");
    assertEquals(List.of("nd_db"), ids(mon.getJsonArray("changed")), mon.encode());
    assertEquals(new JsonObject().put("version", web0).put("unchanged", true), answer(m, "nd_web", web0, 0).getJsonObject("peers"),
        "web's peers did not change: it keeps its version");

    // web may no longer reach db: db loses web, web loses db (as removals, not full sets)
    m.policy(12, "t", "e", 3, grants("tag:mon", "tag:db"));
    JsonObject db2 = answer(m, "nd_db", 11, 0).getJsonObject("peers");
    assertEquals(new JsonArray(), db2.getJsonArray("changed"), db2.encode());
    assertEquals(new JsonArray().add("nd_web"), db2.getJsonArray("removed"), db2.encode());
    JsonObject web = answer(m, "nd_web", web0, 0).getJsonObject("peers");
    assertEquals(new JsonArray().add("nd_db"), web.getJsonArray("removed"), web.encode());
    // an agent that missed both changes still gets one delta with the net effect
    JsonObject db3 = answer(m, "nd_db", db0, 0).getJsonObject("peers");
    assertEquals(List.of("nd_mon"), ids(db3.getJsonArray("changed")), db3.encode());
    assertEquals(new JsonArray().add("nd_web"), db3.getJsonArray("removed"), db3.encode());
  }

  /** More changes than a class's log holds: an agent known before the oldest one gets the full set. */
  @Test
  void anAgentOlderThanTheClassLogGetsTheFullSet() {
    PeerModel m = new PeerModel();
    List<NodeFacts> nodes = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) nodes.add(node("nd_" + i, "n" + i, i + 1));
    m.load(10, nodes, Map.of("t/e", STAR), Map.of("t/e", 1L));
    long v0 = answer(m, "nd_0", 0, 0).getJsonObject("peers").getLong("version");
    long seq = 10;
    for (int k = 0; k <= PeerModel.CLASS_LOG; k++) {
      seq++;
      m.live(seq, "nd_" + (1 + k % 2), null, new String[] {"192.0.2.1:" + (1000 + k)}, null, null);
    }
    JsonObject old = answer(m, "nd_0", v0, 0).getJsonObject("peers");
    assertEquals(seq, old.getLong("version"), old.encode());
    assertTrue(old.containsKey("items"), "past the log: the full set, " + old.encode());
    assertEquals(2, old.getJsonArray("items").size());
    JsonObject recent = answer(m, "nd_0", seq - 1, 0).getJsonObject("peers");
    assertTrue(recent.containsKey("changed"), "within the log: a delta, " + recent.encode());
    assertEquals(1, recent.getJsonArray("changed").size(), recent.encode());
  }

  static List<String> ids(JsonArray entries) {
    return entries.stream().map(o -> ((JsonObject) o).getString("id")).sorted().toList();
  }
}
