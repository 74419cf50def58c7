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
 * Deterministic figures of {@code POST /acl/impact} ({@link PolicyImpact}; not a test: run by hand,
 * see load-tests/RESULTS.md): thread CPU time, allocation and the class counts, in one process, for a
 * 500-grant policy against a candidate that changes 100 of its grants, over 1,000 to 100,000 nodes in
 * 100 roles (linear in nodes), over 100,000 nodes in 100 to 1,000 roles (quadratic in classes), and
 * a candidate that names 1,400 nodes one by one (the most class pairs this suite compares) and one
 * naming 2,000, refused by the class-pair bound before any pair.
 *
 * <p>Run: {@code mvn -q test-compile && java -Xmx3g -cp target/meshplane.jar:target/test-classes
 * io.meshplane.policy.ImpactBench}
 */
public final class ImpactBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  private static final int BASE = PeerModel.address("100.64.0.0");

  public static void main(String[] args) {
    for (int round = 0; round < 3; round++) {
      System.out.printf("round %d%n", round + 1);
      for (int nodes : new int[] {1_000, 10_000, 100_000}) run(nodes, 100);
      for (int roles : new int[] {300, 1_000}) run(100_000, roles);
      List<NodeFacts> fleet = fleet(100_000, 100);
      for (int named : new int[] {1_400, 2_000}) {
        PolicyDocument byName = byName(named);
        time(String.format("100,000 nodes, a candidate naming %,d nodes one by one", named), () -> {
          try {
            PolicyImpact i = PolicyImpact.measured(wide(100, 0), byName, fleet, Deadline.none());
            return String.format("%d classes, %,d class pairs compared", i.classes, i.classPairs);
          } catch (Refusal r) {
            return "refused before any pair: " + r.errors().get(0).message().substring(0, 100) + "…";
          }
        });
      }
    }
  }

  /** 500 grants from 4 nodes each, named one by one ({@code named} nodes in all, at most 2,000), to a role: as many classes as named nodes. */
  private static PolicyDocument byName(int named) {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 500; i++) {
      JsonArray src = new JsonArray();
      for (int k = 0; k < 4; k++) src.add("n-" + ((i * 4 + k) % named));
      grants.add(new JsonObject().put("src", src).put("dst", new JsonArray().add("tag:t" + (i % 100))).put("ports", new JsonArray().add("tcp/22")));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  private static void run(int nodes, int roles) {
    List<NodeFacts> fleet = fleet(nodes, roles);
    PolicyDocument now = wide(roles, 0);
    PolicyDocument candidate = wide(roles, 100);
    time(String.format("%,d nodes, %,d roles, 500 grants, 100 changed", nodes, roles), () -> {
      PolicyImpact i = PolicyImpact.measured(now, candidate, fleet, Deadline.none());
      JsonObject r = i.result;
      JsonObject peers = r.getJsonObject("peers");
      return String.format("%d classes, %,d class pairs; peers +%,d/-%,d pairs, ports +%d/-%d", i.classes, i.classPairs,
          peers.getJsonObject("gained").getLong("pairs"), peers.getJsonObject("lost").getLong("pairs"),
          r.getJsonObject("ports").getInteger("gained_count"), r.getJsonObject("ports").getInteger("lost_count"));
    });
  }

  private static List<NodeFacts> fleet(int nodes, int roles) {
    List<NodeFacts> out = new ArrayList<>();
    for (int i = 0; i < nodes; i++) {
      out.add(new NodeFacts(String.format("nd_%026d", i), "big", "prod", "n-" + i, BASE + i + 1, "k", new String[] {"tag:t" + (i % roles)}, "",
          new String[0], true));
    }
    return out;
  }

  /** 500 grants between the roles' tags; the first {@code changed} of them point elsewhere, on another port. */
  private static PolicyDocument wide(int roles, int changed) {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 500; i++) {
      int dst = i < changed ? (i * 13 + 5) % roles : (i * 7 + 3) % roles;
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (i % roles))).put("dst", new JsonArray().add("tag:t" + dst))
          .put("ports", new JsonArray().add("tcp/" + (1 + i + (i < changed ? 1000 : 0)))));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  private static void time(String what, java.util.function.Supplier<String> work) {
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    long alloc0 = THREADS.getCurrentThreadAllocatedBytes();
    String result = work.get();
    long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    long alloc = THREADS.getCurrentThreadAllocatedBytes() - alloc0;
    System.out.printf("  %-58s %9.1f ms CPU %9.1f MB allocated   %s%n", what, cpu / 1e6, alloc / 1e6, result);
  }
}
