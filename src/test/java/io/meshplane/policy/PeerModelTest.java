package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.node.ChangeLog.NodeFacts;
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
    m.position(11);
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
}
