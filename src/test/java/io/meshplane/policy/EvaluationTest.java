package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Deadline;
import io.meshplane.common.Refusal;
import io.meshplane.node.NodeFacts;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The policy's evaluation without HTTP: the inverted selector index gives exactly the grants that the
 * selectors name (checked against the selectors themselves on generated policies and nodes), the
 * compile estimate refuses a policy that would hold the change feed, and the deadline stops work.
 */
class EvaluationTest {
  private static final int BASE = PeerModel.address("100.64.0.0");

  @Test
  void theIndexNamesExactlyTheGrantsTheSelectorsName() {
    Random random = new Random(7);
    for (int round = 0; round < 200; round++) {
      PolicyDocument p = randomPolicy(random);
      GrantIndex index = new GrantIndex(p);
      for (int i = 0; i < 50; i++) {
        String name = "n" + random.nextInt(8);
        String[] tags = randomTags(random);
        int address = BASE + random.nextInt(1 << 12);
        BitSet src = new BitSet();
        BitSet dst = new BitSet();
        for (PolicyDocument.Grant g : p.grants()) {
          if (g.inSrc(name, tags, address)) src.set(g.index());
          if (g.inDst(name, tags, address)) dst.set(g.index());
        }
        assertEquals(src, index.src(name, tags, address), p.toJson().encode() + " " + name + " " + List.of(tags));
        assertEquals(dst, index.dst(name, tags, address), p.toJson().encode() + " " + name + " " + List.of(tags));
      }
    }
  }

  @Test
  void testsAndAllowedAnswerAsTheSelectorsDo() {
    List<NodeFacts> nodes = List.of(node("web-1", 1, "tag:web"), node("web-2", 2, "tag:web"), node("db-1", 3, "tag:db"));
    PolicyDocument p = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray()
        .add(grant("tag:web", "tag:db", "tcp/5432")).add(grant("100.64.0.1/32", "*", "icmp")))
        .put("tests", new JsonArray().add(new JsonObject().put("src", "tag:web").put("accept", new JsonArray().add("db-1:tcp/5432"))
            .put("deny", new JsonArray().add("db-1:tcp/22").add("web-2:icmp")))));
    Evaluation e = new Evaluation(p, nodes, Deadline.none());
    List<Refusal.FieldError> failures = e.runTests();
    // web-1 (100.64.0.1) may ping everyone: the deny of web-2:icmp fails, naming the pair and the grant
    assertEquals(1, failures.size(), failures.toString());
    assertEquals("/tests/0/deny/1", failures.get(0).field());
    assertTrue(failures.get(0).message().contains("web-1 can reach web-2 on icmp (grant 1: 100.64.0.1/32 -> * icmp)"), failures.toString());
    int web1 = e.find("web-1");
    int db1 = e.find("db-1");
    assertTrue(e.allowed(web1, db1, "tcp", 5432));
    assertTrue(!e.allowed(db1, web1, "tcp", 5432));
    assertEquals(List.of("grant 0: tag:web -> tag:db tcp/5432 (source)", "grant 1: 100.64.0.1/32 -> * icmp (source, destination)"),
        e.matches(web1));
    BitSet peers = e.peersOf(db1);
    assertEquals(2, peers.cardinality());
  }

  @Test
  void testsThatWouldCheckTooManyPairsAreRefusedBeforeAnyPairIsChecked() {
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 500; i++) nodes.add(node("n-" + i, i + 1, "tag:all"));
    JsonArray tests = new JsonArray();
    tests.add(new JsonObject().put("src", "n-0").put("accept", new JsonArray().add("tag:all:tcp/1")));
    tests.add(new JsonObject().put("src", "tag:all").put("deny", new JsonArray().add("tag:all:tcp/1")));
    PolicyDocument p = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray()).put("tests", tests));
    Evaluation e = new Evaluation(p, nodes, Deadline.none());
    Refusal r = assertThrows(Refusal.class, e::runTests);
    assertEquals("/tests/1", r.errors().get(0).field(), "the test that checks the most pairs is named");
    assertTrue(r.getMessage().contains("250500 (source, destination) node pairs"), r.getMessage());
    assertEquals(0, e.pairsChecked);
  }

  @Test
  void aPolicyThatWouldSplitTheFleetIntoManyClassesIsRefused() {
    // 100,000 nodes, all sources of 500 grants whose destinations are 64 nodes each by name: 501 classes whose peer sets each
    // take the union of 501 sets of 100,000 bits
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 100_000; i++) nodes.add(node("n-" + i, i + 1, "tag:src"));
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 500; i++) {
      JsonArray dst = new JsonArray();
      for (int j = 0; j < 64; j++) dst.add("n-" + (i * 64 + j));
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:src")).put("dst", dst).put("ports", new JsonArray().add("tcp/1")));
    }
    PolicyDocument p = PolicyDocument.parse(new JsonObject().put("grants", grants));
    CompileEstimate big = CompileEstimate.of(p, nodes, Deadline.none());
    assertEquals(501, big.classes(), "one class per grant's named destinations, and the rest");
    assertEquals(501L * 501 * 1563 - 1563, big.peerWork());
    Refusal r = assertThrows(Refusal.class, big::check);
    assertEquals("/grants", r.errors().get(0).field());
    // one grant over the same nodes: one class, accepted
    PolicyDocument small = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray().add(grant("tag:src", "tag:src", "tcp/1"))));
    CompileEstimate ok = CompileEstimate.of(small, nodes, Deadline.none());
    assertEquals(1, ok.classes());
    ok.check();
  }

  @Test
  void rulesListingTooManySourceAddressesAreRefused() {
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) nodes.add(node("s-" + i, i + 1, "tag:src"));
    for (int i = 0; i < 400; i++) nodes.add(node("d-" + i, 20_000 + i, "tag:dst"));
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 400; i++) grants.add(grant("tag:src", "d-" + i, "tcp/1"));
    CompileEstimate e = CompileEstimate.of(PolicyDocument.parse(new JsonObject().put("grants", grants)), nodes, Deadline.none());
    assertEquals(4_000_000, e.ruleSources(), "400 destination classes, each listing 10,000 sources");
    Refusal r = assertThrows(Refusal.class, e::check);
    assertTrue(r.getMessage().contains("4000000 source addresses"), r.getMessage());
    // the same with '*' as the source: one entry per rule
    JsonArray star = new JsonArray();
    for (int i = 0; i < 400; i++) star.add(grant("*", "d-" + i, "tcp/1"));
    CompileEstimate.of(PolicyDocument.parse(new JsonObject().put("grants", star)), nodes, Deadline.none()).check();
  }

  @Test
  void workPastItsDeadlineStops() {
    List<NodeFacts> nodes = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) nodes.add(node("n-" + i, i + 1, "tag:all"));
    Deadline gone = Deadline.in(Duration.ofNanos(1), "policy evaluation");
    Refusal r = assertThrows(Refusal.class, () -> new Evaluation(PolicyDocument.EMPTY, nodes, gone));
    assertEquals(Deadline.CODE, r.code());
    assertTrue(r.retryAfterSeconds() > 0);
  }

  private static NodeFacts node(String name, int host, String... tags) {
    return new NodeFacts("nd_" + name, "t", "prod", name, BASE + host, "k", tags, "", new String[0], true);
  }

  private static JsonObject grant(String src, String dst, String port) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray().add(port));
  }

  private static String[] randomTags(Random r) {
    int n = r.nextInt(4);
    String[] out = new String[n];
    for (int i = 0; i < n; i++) out[i] = "tag:t" + r.nextInt(6);
    return out;
  }

  private static PolicyDocument randomPolicy(Random r) {
    JsonArray grants = new JsonArray();
    int n = 1 + r.nextInt(12);
    for (int g = 0; g < n; g++) {
      grants.add(new JsonObject().put("src", selectors(r)).put("dst", selectors(r)).put("ports", new JsonArray().add("*")));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  private static JsonArray selectors(Random r) {
    JsonArray out = new JsonArray();
    int n = 1 + r.nextInt(4);
    for (int i = 0; i < n; i++) {
      switch (r.nextInt(4)) {
        case 0 -> out.add(r.nextInt(10) == 0 ? "*" : "tag:t" + r.nextInt(6));
        case 1 -> out.add("n" + r.nextInt(8));
        default -> {
          int bits = r.nextInt(33);
          int address = BASE + r.nextInt(1 << 12);
          int base = bits == 0 ? 0 : address & (-1 << (32 - bits));
          out.add(((base >>> 24) & 255) + "." + ((base >>> 16) & 255) + "." + ((base >>> 8) & 255) + "." + (base & 255) + "/" + bits);
        }
      }
    }
    return out;
  }
}
