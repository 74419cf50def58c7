package io.meshplane.policy;

import io.meshplane.common.Deadline;
import io.meshplane.common.Refusal;
import io.meshplane.node.NodeFacts;
import io.meshplane.policy.PolicyDocument.Any;
import io.meshplane.policy.PolicyDocument.Grant;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a policy would cost every replica's peer model when its change feed installs it, computed on
 * a policy worker before the PUT commits, so that no accepted policy can hold the feed (one thread per
 * replica, shared by every team) for long: the node classes it makes (distinct pairs of source and
 * destination grant bits), the bit-set work of their peer sets, and the source entries of their
 * compiled rules.
 *
 * <ul>
 *   <li>peer work: per class, (source grants + destination grants) x nodes / 64 word operations, at
 *       most {@value #MAX_PEER_WORK};
 *   <li>rule sources: per class, the source nodes of every grant it is a destination of (a grant from
 *       {@code *} counts 1), at most {@value #MAX_RULE_SOURCES} (about 40 MB of rule text per
 *       replica).
 * </ul>
 * The estimate itself is O(nodes x (tags + prefix lengths) x grants / 64).
 */
record CompileEstimate(int nodes, int classes, long peerWork, long ruleSources) {
  static final long MAX_PEER_WORK = 200_000_000L;
  static final long MAX_RULE_SOURCES = 2_000_000L;

  static CompileEstimate of(PolicyDocument policy, List<NodeFacts> nodes, Deadline deadline) {
    GrantIndex index = new GrantIndex(policy);
    int grants = policy.grants().size();
    long[] sources = new long[grants];
    Map<List<BitSet>, Integer> classes = new HashMap<>();
    for (NodeFacts n : nodes) {
      BitSet s = index.src(n.name(), n.tags(), n.address());
      BitSet d = index.dst(n.name(), n.tags(), n.address());
      for (int g = s.nextSetBit(0); g >= 0; g = s.nextSetBit(g + 1)) sources[g]++;
      classes.merge(List.of(s, d), 1, Integer::sum);
      deadline.tick();
    }
    for (Grant g : policy.grants()) {
      if (g.src().stream().anyMatch(x -> x instanceof Any)) sources[g.index()] = Math.min(sources[g.index()], 1);
    }
    long words = (nodes.size() + 63) / 64;
    long peerWork = 0;
    long ruleSources = 0;
    for (List<BitSet> c : classes.keySet()) {
      BitSet d = c.get(1);
      peerWork += (long) (c.get(0).cardinality() + d.cardinality()) * words;
      for (int g = d.nextSetBit(0); g >= 0; g = d.nextSetBit(g + 1)) ruleSources += sources[g];
      deadline.tick();
    }
    return new CompileEstimate(nodes.size(), classes.size(), peerWork, ruleSources);
  }

  /** Refuses (400, naming {@code /grants}) a policy over either bound, saying what to reduce. */
  void check() {
    if (peerWork > MAX_PEER_WORK) {
      throw Refusal.invalid("/grants", "this policy would split the " + nodes + " nodes into " + classes + " classes of distinct grants, "
          + "whose peer sets cost " + peerWork + " units to compute (at most " + MAX_PEER_WORK + "): give nodes fewer distinct "
          + "combinations of grants (select by shared tags rather than by node name or many small prefixes)");
    }
    if (ruleSources > MAX_RULE_SOURCES) {
      throw Refusal.invalid("/grants", "this policy would compile firewall rules listing " + ruleSources + " source addresses across its "
          + classes + " classes (at most " + MAX_RULE_SOURCES + "): use address prefixes or '*' as sources of grants whose sources are "
          + "many nodes, or fewer distinct destination classes");
    }
  }
}
