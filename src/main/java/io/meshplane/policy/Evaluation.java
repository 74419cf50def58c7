package io.meshplane.policy;

import io.meshplane.common.Deadline;
import io.meshplane.common.Refusal;
import io.meshplane.node.NodeFacts;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.PolicyTest;
import io.meshplane.policy.PolicyDocument.Probe;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A policy evaluated against an inventory snapshot (the policy's own tests on PUT, and previews), on
 * a thread of the policy work pool, never on an event loop. A node's grant bits come from the
 * policy's {@link GrantIndex} (O((tags + prefix lengths) x grants/64) per node, computed once per node
 * and only for the nodes asked about); a (source, destination, port) question is then an
 * intersection of three bit sets over the grants.
 *
 * <p>The tests' size is checked before any of them runs: at most {@value #MAX_PAIRS} (source,
 * destination) node pairs, counted from the inventory's tag counts, else a 400 naming the test that
 * checks the most pairs. Every loop ticks the job's {@link Deadline}.
 */
final class Evaluation {
  /** The most (source, destination) node pairs one document's tests may check. */
  static final int MAX_PAIRS = 200_000;

  /** An inventory snapshot with its name and tag indexes, built once (O(nodes x tags)) and shared by the evaluations over it. */
  static final class Inventory {
    final List<NodeFacts> nodes;
    final Map<String, Integer> byName = new HashMap<>();
    final Map<String, List<Integer>> byTag = new HashMap<>();

    Inventory(List<NodeFacts> nodes, Deadline deadline) {
      this.nodes = nodes;
      for (int i = 0; i < nodes.size(); i++) {
        NodeFacts n = nodes.get(i);
        byName.put(n.name(), i);
        for (String t : n.tags()) byTag.computeIfAbsent(t, k -> new ArrayList<>()).add(i);
        deadline.tick();
      }
    }
  }

  private final PolicyDocument policy;
  private final GrantIndex index;
  private final Inventory inventory;
  private final List<NodeFacts> nodes;
  private final Deadline deadline;
  private final BitSet[] srcOf;
  private final BitSet[] dstOf;
  /** Node bits computed (a work counter: what the evaluation cost, deterministically). */
  long nodeBits;
  /** Node pairs checked. */
  long pairsChecked;

  Evaluation(PolicyDocument policy, List<NodeFacts> nodes, Deadline deadline) {
    this(policy, new Inventory(nodes, deadline), deadline);
  }

  Evaluation(PolicyDocument policy, Inventory inventory, Deadline deadline) {
    this.policy = policy;
    this.index = new GrantIndex(policy);
    this.inventory = inventory;
    this.nodes = inventory.nodes;
    this.deadline = deadline;
    this.srcOf = new BitSet[nodes.size()];
    this.dstOf = new BitSet[nodes.size()];
  }

  /** The same inventory under another policy: a preview's "now" beside its "after". */
  Evaluation under(PolicyDocument other) {
    return new Evaluation(other, inventory, deadline);
  }

  int size() {
    return nodes.size();
  }

  NodeFacts node(int i) {
    return nodes.get(i);
  }

  private BitSet src(int i) {
    if (srcOf[i] == null) bits(i);
    return srcOf[i];
  }

  private BitSet dst(int i) {
    if (dstOf[i] == null) bits(i);
    return dstOf[i];
  }

  private void bits(int i) {
    NodeFacts n = nodes.get(i);
    srcOf[i] = index.src(n.name(), n.tags(), n.address());
    dstOf[i] = index.dst(n.name(), n.tags(), n.address());
    nodeBits++;
    deadline.tick();
  }

  /** The node's index by id or name, or -1. */
  int find(String idOrName) {
    Integer byN = inventory.byName.get(idOrName);
    if (byN != null) return byN;
    for (int i = 0; i < nodes.size(); i++) if (nodes.get(i).id().equals(idOrName)) return i;
    return -1;
  }

  /** The nodes a test's {@code src} or a probe's target names (a node name or a tag), in inventory order. */
  List<Integer> named(String nameOrTag) {
    if (nameOrTag.startsWith("tag:")) return inventory.byTag.getOrDefault(nameOrTag, List.of());
    Integer i = inventory.byName.get(nameOrTag);
    return i == null ? List.of() : List.of(i);
  }

  /** The grants that let node {@code s} reach node {@code d} on proto/port, lowest index first. */
  List<Grant> allowing(int s, int d, String proto, int port) {
    BitSet g = (BitSet) src(s).clone();
    g.and(dst(d));
    g.and(GrantIndex.allowing(policy, proto, port));
    List<Grant> out = new ArrayList<>();
    for (int i = g.nextSetBit(0); i >= 0; i = g.nextSetBit(i + 1)) out.add(policy.grants().get(i));
    return out;
  }

  /**
   * Whether a grant whose source names {@code tag} itself (or {@code *}) lets it reach node {@code d} on
   * proto/port: the tag as a principal, whichever nodes carry it now. Grants only allow, so such a grant
   * also covers every node that carries the tag. O(grants x selectors).
   */
  boolean tagAllowed(String tag, int d, String proto, int port) {
    BitSet to = dst(d);
    for (Grant g : policy.grants()) {
      if (!to.get(g.index()) || !g.allows(proto, port)) continue;
      for (PolicyDocument.Selector sel : g.src()) {
        if (sel instanceof PolicyDocument.Any || sel instanceof PolicyDocument.Tag t && t.text().equals(tag)) return true;
      }
      deadline.tick();
    }
    return false;
  }

  boolean allowed(int s, int d, String proto, int port) {
    return !allowing(s, d, proto, port).isEmpty();
  }

  /** Whether nodes a and b are peers: a grant has one of them as a source and the other as a destination. */
  boolean peers(int a, int b) {
    return src(a).intersects(dst(b)) || src(b).intersects(dst(a));
  }

  /** The node's peers under this policy (indexes, inventory order). */
  BitSet peersOf(int node) {
    BitSet out = new BitSet();
    for (int i = 0; i < nodes.size(); i++) {
      if (i != node && peers(node, i)) out.set(i);
      deadline.tick();
    }
    return out;
  }

  /** acl_matches of the node under this policy. */
  List<String> matches(int n) {
    List<String> out = new ArrayList<>();
    BitSet s = src(n);
    BitSet d = dst(n);
    for (Grant g : policy.grants()) {
      boolean inSrc = s.get(g.index());
      boolean inDst = d.get(g.index());
      if (inSrc || inDst) out.add(g.match(inSrc, inDst));
    }
    return out;
  }

  /**
   * Refuses tests that would check more than {@value #MAX_PAIRS} node pairs, before any runs: 400
   * naming the test that checks the most, with the count. Counting is O(tests x probes).
   */
  void checkSize() {
    long pairs = 0;
    long worst = -1;
    int worstAt = -1;
    for (PolicyTest t : policy.tests()) {
      long sources = named(t.src()).size();
      long mine = 0;
      for (Probe p : t.accept()) mine += sources * named(p.target()).size();
      for (Probe p : t.deny()) mine += sources * named(p.target()).size();
      pairs += mine;
      if (mine > worst) {
        worst = mine;
        worstAt = t.index();
      }
    }
    if (pairs > MAX_PAIRS) {
      throw Refusal.invalid("/tests/" + worstAt, "the tests would check " + pairs + " (source, destination) node pairs, more than "
          + MAX_PAIRS + "; test " + worstAt + " alone checks " + worst + ": name nodes rather than tags with many nodes, or split the tests");
    }
  }

  /** Runs the policy's tests; the failures, each naming its test by JSON pointer (empty: all pass). Call {@link #checkSize} first. */
  List<Refusal.FieldError> runTests() {
    checkSize();
    List<Refusal.FieldError> failures = new ArrayList<>();
    Map<String, BitSet> ports = new HashMap<>();
    for (PolicyTest t : policy.tests()) {
      String at = "/tests/" + t.index();
      List<Integer> sources = named(t.src());
      if (sources.isEmpty()) {
        failures.add(new Refusal.FieldError(at + "/src", "test " + t.index() + ": " + t.src() + " names no node of this team and environment"));
        continue;
      }
      for (int kind = 0; kind < 2; kind++) {
        List<Probe> probes = kind == 0 ? t.accept() : t.deny();
        String key = kind == 0 ? "accept" : "deny";
        for (int i = 0; i < probes.size(); i++) {
          Probe p = probes.get(i);
          List<Integer> targets = named(p.target());
          String field = at + "/" + key + "/" + i;
          if (targets.isEmpty()) {
            failures.add(new Refusal.FieldError(field, "test " + t.index() + ": " + p.target() + " names no node of this team and environment"));
            continue;
          }
          BitSet allowing = ports.computeIfAbsent(p.proto() + "/" + p.port(), k -> GrantIndex.allowing(policy, p.proto(), p.port()));
          String failure = probe(sources, targets, p, allowing, kind == 0);
          if (failure != null) failures.add(new Refusal.FieldError(field, "test " + t.index() + " failed: " + failure));
        }
      }
    }
    return failures;
  }

  private String probe(List<Integer> sources, List<Integer> targets, Probe p, BitSet allowing, boolean accept) {
    String port = p.proto().equals("icmp") ? "icmp" : p.proto() + "/" + p.port();
    for (int s : sources) {
      BitSet from = (BitSet) src(s).clone();
      from.and(allowing);
      for (int d : targets) {
        if (s == d) continue;
        pairsChecked++;
        deadline.tick();
        boolean ok = from.intersects(dst(d));
        if (accept && !ok) return nodes.get(s).name() + " cannot reach " + nodes.get(d).name() + " on " + port;
        if (!accept && ok) {
          return nodes.get(s).name() + " can reach " + nodes.get(d).name() + " on " + port + " ("
              + allowing(s, d, p.proto(), p.port()).get(0).text() + ")";
        }
      }
    }
    return null;
  }
}
