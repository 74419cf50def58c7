package io.meshplane.policy;

import io.meshplane.node.NodeFacts;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Deterministic figures of the peer model (not a test: run by hand, see load-tests/RESULTS.md), in
 * one process without HTTP, so they do not move with this machine's noise: bytes allocated and work
 * counters per heartbeat answer, answer sizes, and the CPU time of a policy change, at N nodes.
 *
 * <p>Run: {@code mvn -q test-compile && java -Xmx2g -cp target/meshplane.jar:target/test-classes
 * io.meshplane.policy.PeerModelBench [nodes, default 10000]}
 */
public final class PeerModelBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  private static long seq = 1;

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    if (args.length > 1 && args[1].equals("memory")) {
      memory(n);
      return;
    }
    System.out.printf("peer model bench: %d nodes in one team+environment%n%n", n);
    List<NodeFacts> nodes = nodes(n, 100);

    idle("empty policy", n, nodes, PolicyDocument.EMPTY);
    idle("50 grants (tag:t2i -> tag:t2i+1)", n, nodes, pairs(0));
    star(n, nodes);
    policyChange(n, nodes);
    enrollIntoBigSource(n);
  }

  /**
   * One enrollment into a tag that is the source of a grant over half the domain: the destination
   * class recompiles its rules, O(sources), under the domain's lock (see docs/ARCHITECTURE.md).
   */
  static void enrollIntoBigSource(int n) {
    List<NodeFacts> nodes = nodes(n, 2); // tag:t0 and tag:t1, half each
    PolicyDocument p = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray().add(new JsonObject()
        .put("src", new JsonArray().add("tag:t0")).put("dst", new JsonArray().add("tag:t1")).put("ports", new JsonArray().add("tcp/5432")))));
    PeerModel m = load(nodes, p);
    int base = PeerModel.address("100.64.0.0");
    long total = 0;
    int enrollments = 20;
    for (int i = 0; i < enrollments; i++) {
      NodeFacts f = new NodeFacts(String.format("nd_x%025d", i), "bench", "prod", "x-" + i, base + n + 10 + i, "kx", new String[] {"tag:t0"},
          "fra1", new String[0], false);
      long cpu0 = THREADS.getCurrentThreadCpuTime();
      m.enroll(seq++, f);
      total += THREADS.getCurrentThreadCpuTime() - cpu0;
    }
    System.out.printf("enrollment into tag:t0 (source of a grant to tag:t1, %d nodes each): %.1f ms CPU per enrollment (the destination"
        + " class's rules, %d sources, recompiled)%n", n / 2, total / 1e6 / enrollments, n / 2);
  }

  /** Heap held by the model per node (50 grants, every node's peer entry encoded once), after full GCs. */
  static void memory(int n) {
    List<NodeFacts> nodes = nodes(n, 100);
    Runtime rt = Runtime.getRuntime();
    long before = used(rt);
    PeerModel m = load(nodes, pairs(0));
    for (NodeFacts f : nodes) m.answer(f.id(), 0, 0, Buffer.buffer(256)); // caches every entry
    long after = used(rt);
    System.out.printf("memory: %d nodes, %d classes: %.0f bytes per node held by the peer model (entries encoded)%n", n, m.classCount(),
        (double) (after - before) / n);
    if (m.nodeCount() != n) throw new IllegalStateException();
  }

  static long used(Runtime rt) {
    for (int i = 0; i < 3; i++) System.gc();
    return rt.totalMemory() - rt.freeMemory();
  }

  static List<NodeFacts> nodes(int n, int tags) {
    List<NodeFacts> out = new ArrayList<>(n);
    int base = PeerModel.address("100.64.0.0");
    for (int i = 0; i < n; i++) {
      out.add(new NodeFacts(String.format("nd_%026d", i), "bench", "prod", "n-" + i, base + i + 1, "k" + i + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
          new String[] {"tag:t" + (i % tags)}, "fra1", new String[] {"198.51.100." + (i % 250) + ":41641"}, true));
    }
    return out;
  }

  /** 50 grants, grant i: tag:t(2i) -> tag:t(2i+1) on tcp/(port0 + i): every node in exactly one grant. */
  static PolicyDocument pairs(int shift) {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 50; i++) {
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (2 * i))).put("dst", new JsonArray().add("tag:t" + ((2 * i + 1 + shift) % 100)))
          .put("ports", new JsonArray().add("tcp/" + (1000 + i))));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  static PeerModel load(List<NodeFacts> nodes, PolicyDocument policy) {
    PeerModel m = new PeerModel();
    m.load(seq++, nodes, Map.of("bench/prod", policy), Map.of("bench/prod", 1L));
    return m;
  }

  /** Every node synced once (full answers), then R rounds of unchanged answers: bytes and counters per answer. */
  static void idle(String name, int n, List<NodeFacts> nodes, PolicyDocument policy) {
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    PeerModel m = load(nodes, policy);
    long loadMs = (THREADS.getCurrentThreadCpuTime() - cpu0) / 1_000_000;
    long[][] known = new long[n][];
    long fullBytes = 0;
    for (int i = 0; i < n; i++) {
      Buffer out = Buffer.buffer(256);
      m.answer(nodes.get(i).id(), 0, 0, out);
      fullBytes += out.length();
      known[i] = m.versions(nodes.get(i).id());
    }
    int rounds = 20;
    for (int r = 0; r < 5; r++) unchangedRound(m, nodes, known); // JIT warm-up
    long full0 = m.fullPeerAnswers.sum() + m.deltaPeerAnswers.sum();
    long enc0 = m.peerEntriesEncoded.sum();
    long sent0 = m.peerEntriesSent.sum();
    long alloc0 = THREADS.getCurrentThreadAllocatedBytes();
    long t0 = THREADS.getCurrentThreadCpuTime();
    long bytes = 0;
    for (int r = 0; r < rounds; r++) bytes += unchangedRound(m, nodes, known);
    long cpu = THREADS.getCurrentThreadCpuTime() - t0;
    long alloc = THREADS.getCurrentThreadAllocatedBytes() - alloc0;
    long answers = (long) rounds * n;
    System.out.printf("%s: load %d ms CPU, %d classes; first sync %.1f KB per node on average%n", name, loadMs, m.classCount(),
        fullBytes / 1024.0 / n);
    System.out.printf("  idle answers: %d; per answer %.0f bytes allocated (incl. the 256-byte answer buffer), %.2f µs CPU, %.0f bytes"
        + " written; full/delta peer answers %d, peer entries encoded %d, sent %d%n%n", answers, (double) alloc / answers,
        cpu / 1000.0 / answers, (double) bytes / answers, m.fullPeerAnswers.sum() + m.deltaPeerAnswers.sum() - full0,
        m.peerEntriesEncoded.sum() - enc0, m.peerEntriesSent.sum() - sent0);
  }

  static long unchangedRound(PeerModel m, List<NodeFacts> nodes, long[][] known) {
    long bytes = 0;
    for (int i = 0; i < nodes.size(); i++) {
      Buffer out = Buffer.buffer(256);
      m.answer(nodes.get(i).id(), known[i][0], known[i][1], out);
      bytes += out.length();
    }
    return bytes;
  }

  /** A * grant over every node: the full set's size, then one node's new endpoints as every other node's next answer. */
  static void star(int n, List<NodeFacts> nodes) {
    PolicyDocument star = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray().add(new JsonObject()
        .put("src", new JsonArray().add("*")).put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*")))));
    PeerModel m = load(nodes, star);
    Buffer one = Buffer.buffer(256);
    m.answer(nodes.get(0).id(), 0, 0, one);
    long[][] known = new long[n][];
    for (int i = 0; i < n; i++) known[i] = m.versions(nodes.get(i).id());
    long s = seq++;
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    m.live(s, nodes.get(42).id(), null, new String[] {"203.0.113.9:41641"}, null, null);
    long applyUs = (THREADS.getCurrentThreadCpuTime() - cpu0) / 1000;
    long enc0 = m.peerEntriesEncoded.sum();
    long sent0 = m.peerEntriesSent.sum();
    long max = 0;
    long total = 0;
    long t0 = THREADS.getCurrentThreadCpuTime();
    for (int i = 0; i < n; i++) {
      if (i == 42) continue;
      Buffer out = Buffer.buffer(256);
      m.answer(nodes.get(i).id(), known[i][0], known[i][1], out);
      max = Math.max(max, out.length());
      total += out.length();
    }
    long cpu = THREADS.getCurrentThreadCpuTime() - t0;
    System.out.printf("* grant over %d nodes: a full peer set is %.0f KB%n", n, one.length() / 1024.0);
    System.out.printf("  one node's new endpoints: applied in %d µs CPU; the other %d nodes' next answers: max %d bytes, mean %.0f bytes,"
        + " %.2f µs CPU each; peer entries encoded %d, sent %d%n%n", applyUs, n - 1, max, (double) total / (n - 1), cpu / 1000.0 / (n - 1),
        m.peerEntriesEncoded.sum() - enc0, m.peerEntriesSent.sum() - sent0);
  }

  /** CPU time of policy changes at n nodes, and how many nodes' versions each one moved. */
  static void policyChange(int n, List<NodeFacts> nodes) {
    PeerModel m = load(nodes, pairs(0));
    long[][] before = versions(m, nodes);
    change(m, nodes, before, "50 grants -> same pairs, other ports (rules change, peers do not)", portsShifted(), 2);
    before = versions(m, nodes);
    change(m, nodes, before, "50 grants -> other pairs (peers and rules change)", pairs(2), 3);
    before = versions(m, nodes);
    PolicyDocument plusOne = withExtra(pairs(2));
    change(m, nodes, before, "one grant added (tag:t98 -> tag:t99 tcp/22): only its nodes move", plusOne, 4);
  }

  static void change(PeerModel m, List<NodeFacts> nodes, long[][] before, String what, PolicyDocument doc, long version) {
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    m.policy(seq++, "bench", "prod", version, doc);
    long ms = (THREADS.getCurrentThreadCpuTime() - cpu0) / 1_000_000;
    long[][] after = versions(m, nodes);
    int peersMoved = 0;
    int aclMoved = 0;
    for (int i = 0; i < nodes.size(); i++) {
      if (after[i][0] != before[i][0]) peersMoved++;
      if (after[i][1] != before[i][1]) aclMoved++;
    }
    System.out.printf("policy change, %s: %d ms CPU; nodes with a new peers version %d, with a new acl version %d, of %d%n", what, ms,
        peersMoved, aclMoved, nodes.size());
  }

  static PolicyDocument portsShifted() {
    JsonArray grants = new JsonArray();
    for (int i = 0; i < 50; i++) {
      grants.add(new JsonObject().put("src", new JsonArray().add("tag:t" + (2 * i))).put("dst", new JsonArray().add("tag:t" + (2 * i + 1)))
          .put("ports", new JsonArray().add("tcp/" + (2000 + i))));
    }
    return PolicyDocument.parse(new JsonObject().put("grants", grants));
  }

  static PolicyDocument withExtra(PolicyDocument base) {
    JsonObject j = base.toJson();
    j.getJsonArray("grants").add(new JsonObject().put("src", new JsonArray().add("tag:t98")).put("dst", new JsonArray().add("tag:t99"))
        .put("ports", new JsonArray().add("tcp/22")));
    return PolicyDocument.parse(j);
  }

  static long[][] versions(PeerModel m, List<NodeFacts> nodes) {
    long[][] out = new long[nodes.size()][];
    for (int i = 0; i < nodes.size(); i++) out[i] = m.versions(nodes.get(i).id());
    return out;
  }
}
