package io.meshplane.policy;

import io.meshplane.common.Deadline;
import io.meshplane.common.Refusal;
import io.meshplane.node.NodeFacts;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.PortRange;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A candidate policy's fleet-wide effect against the current one (API.md, {@code POST /v1/acl/impact}):
 * how many nodes gain and lose peers, how many node pairs, and which ports and protocols (source,
 * destination) node pairs gain and lose, with a few example nodes per change. Saves nothing.
 *
 * <h2>Classes, not pairs</h2>
 * Whether two nodes are peers, and on which ports one reaches the other, depends only on the grants
 * each is a source and a destination of (the {@link PeerClass} idea). Under two policies it depends on
 * four bit sets per node: nodes sharing all four form one <em>joint class</em>. The work is
 * <ul>
 *   <li>O(nodes x (tags + prefix lengths) x grants / 64): each node's four bit sets (two
 *       {@link GrantIndex}es), grouped into K joint classes;
 *   <li>O(K² / 2 x grants / 64): every unordered pair of classes (itself included) tested for peers
 *       under both policies, and each direction's grants intersected; a pair's node count is the
 *       product of the class sizes;
 *   <li>the ports a direction gains or loses, computed once per distinct (grants now, grants then):
 *       O(distinct grant sets x port entries).
 * </ul>
 * A fleet of 100,000 nodes in 40 roles costs 100,000 bit-set rows and 40 x 41 / 2 class pairs, never
 * 5 x 10⁹ node pairs. The pair count is bounded ({@value #MAX_CLASS_PAIRS}) and checked before any pair
 * is compared: a candidate (or a current policy) that names nodes one by one gives as many classes as
 * nodes, and is refused with a 400 saying so. Every loop ticks the job's {@link Deadline}.
 */
final class PolicyImpact {
  /** The most unordered pairs of joint classes one impact compares (K x (K + 1) / 2). */
  static final long MAX_CLASS_PAIRS = 2_000_000L;
  /** The bound in force: {@link #MAX_CLASS_PAIRS}; the API tests lower it to see the refusal on a small mesh. */
  static volatile long maxClassPairs = MAX_CLASS_PAIRS;
  /** Example node pairs per change. */
  static final int EXAMPLES = 3;
  /** Port changes listed per direction (gained, lost), most node pairs first; the count is whole. */
  static final int MAX_PORT_CHANGES = 50;

  /** Nodes with the same grants, now and with the candidate; the first two members stand for it. */
  private static final class Joint {
    final BitSet src0;
    final BitSet dst0;
    final BitSet src1;
    final BitSet dst1;
    final int first;
    int second = -1;
    long size;
    /** Peers a member gains, loses. */
    long gained;
    long lost;

    Joint(BitSet[] bits, int first) {
      this.src0 = bits[0];
      this.dst0 = bits[1];
      this.src1 = bits[2];
      this.dst1 = bits[3];
      this.first = first;
    }
  }

  /** One port change: how many (source, destination) node pairs, and a few of them. */
  private static final class Change {
    long pairs;
    final JsonArray examples = new JsonArray();
  }

  private final PolicyDocument now;
  private final PolicyDocument candidate;
  private final List<NodeFacts> nodes;
  private final Deadline deadline;
  private final Map<BitSet, Ports> coverNow = new HashMap<>();
  private final Map<BitSet, Ports> coverThen = new HashMap<>();
  private final Map<List<Ports>, List<List<String>>> diffs = new HashMap<>();
  private final Map<String, Change> portsGained = new HashMap<>();
  private final Map<String, Change> portsLost = new HashMap<>();
  private final JsonArray gainedExamples = new JsonArray();
  private final JsonArray lostExamples = new JsonArray();
  private long pairsGained;
  private long pairsLost;
  /** Work counters (deterministic figures for the benchmark). */
  long classPairs;
  int classes;
  /** What {@link #measured} computed. */
  JsonObject result;

  private PolicyImpact(PolicyDocument now, PolicyDocument candidate, List<NodeFacts> nodes, Deadline deadline) {
    this.now = now;
    this.candidate = candidate;
    this.nodes = nodes;
    this.deadline = deadline;
  }

  /** The candidate's effect against {@code now} over {@code nodes} (sorted by id); 400 when it would compare too many class pairs. */
  static JsonObject of(PolicyDocument now, PolicyDocument candidate, List<NodeFacts> nodes, Deadline deadline) {
    return new PolicyImpact(now, candidate, nodes, deadline).run();
  }

  /** As {@link #of}, for the benchmark: the computation with its counters. */
  static PolicyImpact measured(PolicyDocument now, PolicyDocument candidate, List<NodeFacts> nodes, Deadline deadline) {
    PolicyImpact i = new PolicyImpact(now, candidate, nodes, deadline);
    i.result = i.run();
    return i;
  }

  private JsonObject run() {
    GrantIndex i0 = new GrantIndex(now);
    GrantIndex i1 = new GrantIndex(candidate);
    Map<List<BitSet>, Joint> byBits = new LinkedHashMap<>();
    for (int n = 0; n < nodes.size(); n++) {
      NodeFacts f = nodes.get(n);
      BitSet[] bits = {i0.src(f.name(), f.tags(), f.address()), i0.dst(f.name(), f.tags(), f.address()),
          i1.src(f.name(), f.tags(), f.address()), i1.dst(f.name(), f.tags(), f.address())};
      int at = n;
      Joint j = byBits.computeIfAbsent(List.of(bits), k -> new Joint(bits, at));
      if (j.size == 1) j.second = n;
      j.size++;
      deadline.tick();
    }
    List<Joint> js = new ArrayList<>(byBits.values());
    classes = js.size();
    long pairs = (long) classes * (classes + 1) / 2;
    if (pairs > maxClassPairs) {
      throw Refusal.invalid("/policy/grants", "comparing this candidate with the current policy over the " + nodes.size() + " nodes takes "
          + classes + " classes of distinct grants (now and with the candidate), " + pairs + " class pairs, more than " + maxClassPairs
          + ": select nodes by shared tags rather than by node name or many small prefixes (in the candidate, or first in the "
          + "current policy), or preview single nodes");
    }
    for (int a = 0; a < js.size(); a++) {
      for (int b = a; b < js.size(); b++) {
        pair(js.get(a), js.get(b));
        deadline.tick();
      }
    }
    classPairs = pairs;
    long nodesGaining = 0;
    long nodesLosing = 0;
    for (Joint j : js) {
      if (j.gained > 0) nodesGaining += j.size;
      if (j.lost > 0) nodesLosing += j.size;
    }
    return new JsonObject()
        .put("nodes", nodes.size())
        .put("classes", classes)
        .put("peers", new JsonObject()
            .put("gained", new JsonObject().put("nodes", nodesGaining).put("pairs", pairsGained).put("examples", gainedExamples))
            .put("lost", new JsonObject().put("nodes", nodesLosing).put("pairs", pairsLost).put("examples", lostExamples)))
        .put("ports", new JsonObject()
            .put("gained", changes(portsGained)).put("gained_count", portsGained.size())
            .put("lost", changes(portsLost)).put("lost_count", portsLost.size()));
  }

  /** Classes a and b (possibly the same class): peers now and then, and the ports each direction gains and loses. */
  private void pair(Joint a, Joint b) {
    boolean same = a == b;
    if (same && a.size < 2) return;
    long count = same ? a.size * (a.size - 1) / 2 : a.size * b.size;
    boolean was = a.src0.intersects(b.dst0) || b.src0.intersects(a.dst0);
    boolean will = a.src1.intersects(b.dst1) || b.src1.intersects(a.dst1);
    int other = same ? a.second : b.first;
    if (will && !was) {
      pairsGained += count;
      a.gained += same ? a.size - 1 : b.size;
      b.gained += same ? 0 : a.size;
      if (gainedExamples.size() < EXAMPLES) gainedExamples.add(example("node", a.first, "peer", other));
    } else if (was && !will) {
      pairsLost += count;
      a.lost += same ? a.size - 1 : b.size;
      b.lost += same ? 0 : a.size;
      if (lostExamples.size() < EXAMPLES) lostExamples.add(example("node", a.first, "peer", other));
    }
    if (!was && !will) return;
    direction(a, b, same ? a.size * (a.size - 1) : count, a.first, other);
    if (!same) direction(b, a, count, b.first, a.first);
  }

  /** From class s to class d ({@code count} directed node pairs): the ports gained and lost. */
  private void direction(Joint s, Joint d, long count, int from, int to) {
    BitSet g0 = (BitSet) s.src0.clone();
    g0.and(d.dst0);
    BitSet g1 = (BitSet) s.src1.clone();
    g1.and(d.dst1);
    if (g0.isEmpty() && g1.isEmpty()) return;
    Ports p0 = coverNow.computeIfAbsent(g0, g -> Ports.of(now, g));
    Ports p1 = coverThen.computeIfAbsent(g1, g -> Ports.of(candidate, g));
    if (p0.equals(p1)) return;
    List<List<String>> diff = diffs.computeIfAbsent(List.of(p0, p1), k -> List.of(p1.minus(p0), p0.minus(p1)));
    for (int k = 0; k < 2; k++) {
      for (String port : diff.get(k)) {
        Change c = (k == 0 ? portsGained : portsLost).computeIfAbsent(port, x -> new Change());
        c.pairs += count;
        if (c.examples.size() < EXAMPLES) c.examples.add(example("src", from, "dst", to));
      }
    }
  }

  private JsonObject example(String k1, int n1, String k2, int n2) {
    return new JsonObject().put(k1, brief(nodes.get(n1))).put(k2, brief(nodes.get(n2)));
  }

  private static JsonObject brief(NodeFacts n) {
    return new JsonObject().put("id", n.id()).put("name", n.name());
  }

  private static JsonArray changes(Map<String, Change> m) {
    JsonArray out = new JsonArray();
    m.entrySet().stream()
        .sorted(Comparator.<Map.Entry<String, Change>>comparingLong(e -> -e.getValue().pairs).thenComparing(Map.Entry::getKey))
        .limit(MAX_PORT_CHANGES)
        .forEach(e -> out.add(new JsonObject().put("port", e.getKey()).put("pairs", e.getValue().pairs).put("examples", e.getValue().examples)));
    return out;
  }

  /** What a set of grants opens: tcp and udp port intervals (merged, sorted) and icmp. */
  record Ports(List<int[]> tcp, List<int[]> udp, boolean icmp) {
    static final Ports NONE = new Ports(List.of(), List.of(), false);

    static Ports of(PolicyDocument policy, BitSet grants) {
      if (grants.isEmpty()) return NONE;
      List<int[]> tcp = new ArrayList<>();
      List<int[]> udp = new ArrayList<>();
      boolean icmp = false;
      for (int g = grants.nextSetBit(0); g >= 0; g = grants.nextSetBit(g + 1)) {
        Grant grant = policy.grants().get(g);
        for (PortRange r : grant.ports()) {
          switch (r.proto()) {
            case "*" -> {
              tcp.add(new int[] {1, 65535});
              udp.add(new int[] {1, 65535});
              icmp = true;
            }
            case "icmp" -> icmp = true;
            case "tcp" -> tcp.add(new int[] {r.from(), r.to()});
            default -> udp.add(new int[] {r.from(), r.to()});
          }
        }
      }
      return new Ports(merge(tcp), merge(udp), icmp);
    }

    private static List<int[]> merge(List<int[]> in) {
      in.sort(Comparator.comparingInt(x -> x[0]));
      List<int[]> out = new ArrayList<>();
      for (int[] r : in) {
        int[] last = out.isEmpty() ? null : out.get(out.size() - 1);
        if (last != null && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
        else out.add(new int[] {r[0], r[1]});
      }
      return List.copyOf(out);
    }

    /** What this opens that {@code other} does not, as port texts ({@code tcp/5432}, {@code udp/1000-2000}, {@code tcp/*}, {@code icmp}). */
    List<String> minus(Ports other) {
      List<String> out = new ArrayList<>();
      minus("tcp", tcp, other.tcp, out);
      minus("udp", udp, other.udp, out);
      if (icmp && !other.icmp) out.add("icmp");
      return out;
    }

    private static void minus(String proto, List<int[]> a, List<int[]> b, List<String> out) {
      for (int[] r : a) {
        int from = r[0];
        for (int[] s : b) {
          if (s[1] < from || s[0] > r[1]) continue;
          if (s[0] > from) out.add(text(proto, from, s[0] - 1));
          from = Math.max(from, s[1] + 1);
          if (from > r[1]) break;
        }
        if (from <= r[1]) out.add(text(proto, from, r[1]));
      }
    }

    private static String text(String proto, int from, int to) {
      if (from == 1 && to == 65535) return proto + "/*";
      return proto + "/" + (from == to ? Integer.toString(from) : from + "-" + to);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Ports p && icmp == p.icmp && same(tcp, p.tcp) && same(udp, p.udp);
    }

    @Override
    public int hashCode() {
      int h = icmp ? 1 : 0;
      for (int[] r : tcp) h = h * 31 + r[0] * 65536 + r[1];
      for (int[] r : udp) h = h * 37 + r[0] * 65536 + r[1];
      return h;
    }

    private static boolean same(List<int[]> a, List<int[]> b) {
      if (a.size() != b.size()) return false;
      for (int i = 0; i < a.size(); i++) if (a.get(i)[0] != b.get(i)[0] || a.get(i)[1] != b.get(i)[1]) return false;
      return true;
    }
  }
}
