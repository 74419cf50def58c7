package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.node.NodeFacts;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A watch stream's answer parts against the heartbeat's answer: byte for byte the same for every node
 * and every version an agent may hold, through a history of live changes, re-tags, enrollments,
 * deletions and policy changes; and the parts that nodes of one class share are encoded once.
 */
class StreamPartsTest {
  static final String[] TAGS = {"tag:web", "tag:db", "tag:mon", "tag:ops"};

  static PolicyDocument policy(String port) {
    JsonArray g = new JsonArray()
        .add(grant("tag:web", "tag:db", port))
        .add(grant("tag:mon", "*", "tcp/9100"))
        .add(grant("tag:ops", "tag:web", "tcp/22"))
        .add(grant("10.20.0.0/16", "tag:db", "tcp/5432"));
    return PolicyDocument.parse(new JsonObject().put("grants", g));
  }

  static JsonObject grant(String src, String dst, String port) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray().add(port));
  }

  static NodeFacts node(int i, String tag) {
    return new NodeFacts("nd_" + i, "t", "e", "n" + i, PeerModel.address("100.64." + (i / 200) + "." + (i % 200 + 1)), "key-" + i,
        new String[] {tag}, i % 2 == 0 ? "fra1" : "ams1", new String[] {"198.51.100." + (i % 250) + ":41641"}, true);
  }

  static String heartbeat(PeerModel m, String id, long peers, long acl) {
    Buffer out = Buffer.buffer();
    m.answer(id, peers, acl, out);
    return out.toString();
  }

  static String stream(PeerModel m, String id, long peers, long acl, Map<Object, Object> shared) {
    List<Buffer> parts = new ArrayList<>();
    m.streamParts(id, peers, acl, shared, parts);
    return StreamParts.join(parts).toString();
  }

  @Test
  void everyNodeAndEveryHeldVersionGetsExactlyTheHeartbeatsAnswer() {
    PeerModel m = new PeerModel();
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 60; i++) nodes.add(node(i, TAGS[i % TAGS.length]));
    m.load(100, nodes, Map.of("t/e", policy("tcp/5432")), Map.of("t/e", 1L));
    Random r = new Random(27);
    TreeSet<Long> seen = new TreeSet<>(List.of(-1L, 0L, 100L, 5000L));
    long seq = 100;
    for (int step = 0; step < 40; step++) {
      seq++;
      switch (step % 8) {
        case 0, 1, 2 -> m.live(seq, "nd_" + r.nextInt(60), null, new String[] {"203.0.113." + r.nextInt(250) + ":41641"}, null, null);
        case 3 -> m.retag(seq, "nd_" + r.nextInt(60), new String[] {TAGS[r.nextInt(TAGS.length)]});
        case 4 -> m.enroll(seq, node(60 + step, TAGS[r.nextInt(TAGS.length)]));
        case 5 -> m.delete(seq, "nd_" + (60 + step - 1));
        case 6 -> m.policy(seq, "t", "e", step, policy("tcp/" + (5000 + step)));
        default -> m.live(seq, "nd_" + r.nextInt(60), null, null, r.nextBoolean(), null);
      }
      seen.add(seq);
      Map<Object, Object> shared = new HashMap<>();
      for (int i = 0; i < 60 + step; i++) {
        String id = "nd_" + i;
        for (long peers : seen) {
          for (long acl : new long[] {-1, 0, seq - 3, seq}) {
            assertEquals(heartbeat(m, id, peers, acl), stream(m, id, peers, acl, shared),
                id + " holding peers " + peers + ", acl " + acl + " after step " + step);
          }
        }
      }
    }
  }

  @Test
  void aPolicyChangeForEveryNodeIsEncodedOncePerClassNotPerNode() {
    PeerModel m = new PeerModel();
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 2000; i++) nodes.add(node(i, TAGS[i % TAGS.length]));
    m.load(10, nodes, Map.of("t/e", policy("tcp/5432")), Map.of("t/e", 1L));
    long[] held = new long[2000 * 2];
    for (int i = 0; i < 2000; i++) {
      long[] v = m.versions("nd_" + i);
      held[2 * i] = v[0];
      held[2 * i + 1] = v[1];
    }
    m.policy(11, "t", "e", 2, policy("tcp/6432"));
    Map<Object, Object> shared = new HashMap<>();
    long sentBefore = m.peerEntriesSent.sum();
    int changed = 0;
    for (int i = 0; i < 2000; i++) {
      String s = stream(m, "nd_" + i, held[2 * i], held[2 * i + 1], shared);
      if (s.contains("\"rules\"")) changed++;
    }
    assertTrue(changed > 0);
    assertTrue(shared.size() <= m.classCount() * 3, shared.size() + " parts encoded for " + m.classCount() + " classes and 2000 nodes");
    assertTrue(m.peerEntriesSent.sum() - sentBefore <= (long) m.classCount() * 2000,
        "peer entries encoded per class, not per node: " + (m.peerEntriesSent.sum() - sentBefore));
  }
}
