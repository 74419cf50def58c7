package io.meshplane.policy;

import io.meshplane.common.Deadline;
import io.meshplane.common.Refusal;
import io.meshplane.node.NodeFacts;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Deterministic figures of policy evaluation (not a test: run by hand, see load-tests/RESULTS.md):
 * thread CPU time and work counters, in one process, for the outsider's probe document, the largest
 * document the pair count accepts over the same team, a node preview and a compile estimate over a
 * 100,000-node team, and, for comparison, the selector test the evaluation used before the index
 * (every selector of every grant against every tag of both nodes, per pair).
 *
 * <p>Run: {@code mvn -q test-compile && java -Xmx3g -cp target/meshplane.jar:target/test-classes
 * io.meshplane.policy.EvaluationBench}
 */
public final class EvaluationBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  private static final int BASE = PeerModel.address("100.64.0.0");

  public static void main(String[] args) {
    List<NodeFacts> loud = new ArrayList<>();
    String[] tags = new String[32];
    tags[0] = "tag:a";
    tags[1] = "tag:b";
    for (int i = 2; i < 32; i++) tags[i] = "tag:t" + (i - 2);
    for (int i = 0; i < 45; i++) loud.add(new NodeFacts(String.format("nd_%026d", i), "loud", "prod", "loud-" + i, BASE + i + 1, "k", tags, "",
        new String[0], true));
    PolicyDocument probe = PolicyDocument.parse(PolicyIsolationTest.probeDocument());
    PolicyDocument accepted = PolicyDocument.parse(acceptedDocument());
    for (int round = 0; round < 3; round++) {
      System.out.printf("round %d%n", round + 1);
      time("probe document: pairs counted, refused", () -> {
        Evaluation e = new Evaluation(probe, loud, Deadline.none());
        try {
          e.runTests();
          return "accepted?";
        } catch (Refusal r) {
          return "refused (" + r.errors().get(0).field() + "), pairs checked " + e.pairsChecked;
        }
      });
      time("largest accepted document over the probe's team (198,450 pairs)", () -> {
        Evaluation e = new Evaluation(accepted, loud, Deadline.none());
        List<Refusal.FieldError> failures = e.runTests();
        return failures.size() + " failures, pairs checked " + e.pairsChecked + ", node bits " + e.nodeBits;
      });
      time("the same pairs with the selector test of before (2,000 pairs of it)", () -> {
        long checks = 0;
        int pairs = 0;
        outer:
        for (NodeFacts s : loud) {
          for (NodeFacts d : loud) {
            if (s == d) continue;
            for (PolicyDocument.Grant g : accepted.grants()) {
              checks++;
              if (g.inSrc(s.name(), s.tags(), s.address()) && g.inDst(d.name(), d.tags(), d.address()) && g.allows("icmp", 0)) break;
            }
            if (++pairs == 2000) break outer;
          }
        }
        return pairs + " pairs, " + checks + " grant checks";
      });
      List<NodeFacts> big = new ArrayList<>();
      for (int i = 0; i < 100_000; i++) {
        big.add(new NodeFacts(String.format("nd_%026d", i), "big", "prod", "n-" + i, BASE + i + 1, "k", new String[] {"tag:t" + (i % 100)}, "",
            new String[0], true));
      }
      PolicyDocument wide = wideDocument();
      time("node preview over 100,000 nodes, 500 grants (before and after)", () -> {
        Evaluation after = new Evaluation(wide, big, Deadline.none());
        Evaluation before = after.under(PolicyDocument.EMPTY);
        int n = after.find("n-0");
        return "peers " + after.peersOf(n).cardinality() + " (now " + before.peersOf(n).cardinality() + "), node bits " + (after.nodeBits
            + before.nodeBits);
      });
      time("compile estimate over 100,000 nodes, 500 grants", () -> {
        CompileEstimate c = CompileEstimate.of(wide, big, Deadline.none());
        return c.classes() + " classes, peer work " + c.peerWork() + ", rule sources " + c.ruleSources();
      });
    }
  }

  private static void time(String what, java.util.function.Supplier<String> work) {
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    long alloc0 = THREADS.getCurrentThreadAllocatedBytes();
    String result = work.get();
    long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    long alloc = THREADS.getCurrentThreadAllocatedBytes() - alloc0;
    System.out.printf("  %-70s %9.1f ms CPU %9.1f MB allocated   %s%n", what, cpu / 1e6, alloc / 1e6, result);
  }

  /** The most the pair count accepts over 45 nodes that all carry tag:a and tag:b: 2 tests of 49 probes, 198,450 pairs. */
  static JsonObject acceptedDocument() {
    List<String> names = new ArrayList<>();
    for (char c : "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray()) names.add(String.valueOf(c));
    for (char c : "abcdefghijklmnopqrstuvwxyz0123456789".toCharArray()) names.add("x" + c);
    JsonArray grants = new JsonArray();
    for (int g = 0; g < 90; g++) {
      grants.add(new JsonObject().put("src", new JsonArray(names.subList(0, 40))).put("dst", new JsonArray().add("tag:t" + (g % 30)))
          .put("ports", new JsonArray().add("tcp/" + (1 + g))));
    }
    JsonArray tests = new JsonArray();
    for (int t = 0; t < 2; t++) {
      JsonArray deny = new JsonArray();
      for (int j = 0; j < 49; j++) deny.add("tag:b:icmp");
      tests.add(new JsonObject().put("src", "tag:a").put("deny", deny));
    }
    return new JsonObject().put("grants", grants).put("tests", tests);
  }

  /** 500 grants between the 100 tags of the big team. */
  static PolicyDocument wideDocument() {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 500; i++) {
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (i % 100))).put("dst", new JsonArray().add("tag:t" + ((i * 7 + 3) % 100)))
          .put("ports", new JsonArray().add("tcp/" + (1 + i))));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }
}
