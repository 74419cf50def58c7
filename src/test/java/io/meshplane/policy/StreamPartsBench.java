package io.meshplane.policy;

import io.meshplane.node.NodeFacts;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a change costs the watch stream's dispatch, deterministic (not a test: run by hand, see
 * load-tests/RESULTS.md): for every node of an N-node team, the answer a stream gets after a policy
 * change or a peer's endpoint change, built as shared parts ({@link StreamParts}) and, for
 * comparison, as one heartbeat answer per node ({@link PeerAnswers}): the CPU and bytes allocated on
 * this thread by one pass over every node (the versions compared, the answers that are due built),
 * bytes per answer, parts encoded once and peer entries written.
 *
 * <p>Run: {@code mvn -q test-compile && java -Xmx3g -cp target/meshplane.jar:target/test-classes
 * io.meshplane.policy.StreamPartsBench [nodes, default 100000] [tags, default nodes / 100]}
 */
public final class StreamPartsBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int tags = args.length > 1 ? Integer.parseInt(args[1]) : Math.max(100, n / 100);
    System.out.printf("stream parts bench: %d nodes over %d tags in one team+environment, 50 grants over tag:t0..t99%n%n", n, tags);
    List<NodeFacts> nodes = PeerModelBench.nodes(n, tags);
    PeerModel m = new PeerModel();
    m.load(1, nodes, Map.of("bench/prod", PeerModelBench.pairs(0)), Map.of("bench/prod", 1L));
    int rounds = 8; // JIT warm-up, then the measured (last) round
    for (int round = 0; round < rounds; round++) {
      long[][] held = versions(m, nodes);
      m.policy(10 + round, "bench", "prod", 2 + round, shifted(round));
      measure(m, nodes, held, round == rounds - 1, "policy change: every node of tag:t0..t99 gets new rules (other ports)");
    }
    for (int round = 0; round < rounds; round++) {
      long[][] held = versions(m, nodes);
      JsonObject doc = new JsonObject().put("grants", PeerModelBench.pairs(0).grants().isEmpty() ? new JsonArray() : everyone(round));
      m.policy(30 + round, "bench", "prod", 20 + round, PolicyDocument.parse(doc));
      measure(m, nodes, held, round == rounds - 1, "policy change: every node gets a new rule (10.20.0.0/16 -> * on another port)");
    }
    for (int round = 0; round < 50; round++) {
      long[][] held = versions(m, nodes);
      m.live(100 + round, nodes.get(1).id(), null, new String[] {"203.0.113." + round + ":41641"}, null, null);
      measure(m, nodes, held, round == 49, "one peer's endpoint change (its peers get a delta)");
    }
    System.out.printf("%nclasses: %d%n", m.classCount());
  }

  static PolicyDocument shifted(int round) {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 50; i++) {
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (2 * i))).put("dst", new JsonArray().add("tag:t" + (2 * i + 1)))
          .put("ports", new JsonArray().add("tcp/" + (2000 + 100 * round + i))));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  /** The 50 pair grants and one that reaches every node from a prefix, on a port that moves with {@code round}. */
  static JsonArray everyone(int round) {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 50; i++) {
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (2 * i))).put("dst", new JsonArray().add("tag:t" + (2 * i + 1)))
          .put("ports", new JsonArray().add("tcp/" + (1000 + i))));
    }
    grants.add(new JsonObject().put("src", new JsonArray().add("10.20.0.0/16")).put("dst", new JsonArray().add("*"))
        .put("ports", new JsonArray().add("tcp/" + (3000 + round))));
    return grants;
  }

  static long[][] versions(PeerModel m, List<NodeFacts> nodes) {
    long[][] out = new long[nodes.size()][];
    for (int i = 0; i < nodes.size(); i++) out[i] = m.versions(nodes.get(i).id());
    return out;
  }

  static void measure(PeerModel m, List<NodeFacts> nodes, long[][] held, boolean print, String what) {
    // one heartbeat answer per node, each encoded on its own
    long sent0 = m.peerEntriesSent.sum();
    long alloc0 = THREADS.getCurrentThreadAllocatedBytes();
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    long bytes = 0;
    int changed = 0;
    for (int i = 0; i < nodes.size(); i++) {
      if (held[i][0] >= m.versions(nodes.get(i).id())[0] && held[i][1] >= m.versions(nodes.get(i).id())[1]) continue;
      Buffer out = Buffer.buffer(256);
      m.answer(nodes.get(i).id(), held[i][0], held[i][1], out);
      bytes += out.length();
      changed++;
    }
    long hbCpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    long hbAlloc = THREADS.getCurrentThreadAllocatedBytes() - alloc0;
    long hbSent = m.peerEntriesSent.sum() - sent0;
    // the stream's pass: parts shared per class and versions
    sent0 = m.peerEntriesSent.sum();
    alloc0 = THREADS.getCurrentThreadAllocatedBytes();
    cpu0 = THREADS.getCurrentThreadCpuTime();
    Map<Object, Object> shared = new HashMap<>();
    long streamBytes = 0;
    for (int i = 0; i < nodes.size(); i++) {
      long[] v = m.versions(nodes.get(i).id());
      if (held[i][0] >= v[0] && held[i][1] >= v[1]) continue;
      List<Buffer> parts = new ArrayList<>(4);
      m.streamParts(nodes.get(i).id(), held[i][0], held[i][1], shared, parts);
      for (Buffer b : parts) streamBytes += b.length();
    }
    long stCpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    long stAlloc = THREADS.getCurrentThreadAllocatedBytes() - alloc0;
    long stSent = m.peerEntriesSent.sum() - sent0;
    if (!print) return;
    System.out.printf("%s: %d of %d nodes get an answer%n", what, changed, nodes.size());
    System.out.printf("  heartbeat answers, one per node:  pass %.1f ms CPU, %.1f MB allocated; %.0f bytes per answer, %d peer entries written%n",
        hbCpu / 1e6, hbAlloc / 1e6, (double) bytes / Math.max(1, changed), hbSent);
    System.out.printf("  stream parts, shared per class:   pass %.1f ms CPU, %.1f MB allocated; %.0f bytes per answer, %d peer entries written, "
        + "%d parts encoded once%n", stCpu / 1e6, stAlloc / 1e6, (double) streamBytes / Math.max(1, changed), stSent, shared.size());
  }
}
