package io.meshplane.policy;

import io.meshplane.policy.PolicyDocument.Any;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.Host;
import io.meshplane.policy.PolicyDocument.Prefix;
import io.meshplane.policy.PolicyDocument.Selector;
import io.meshplane.policy.PolicyDocument.Tag;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A policy's selectors turned inside out: for each tag, name and address prefix that a selector
 * names, the grants whose source (or destination) it is in. A node's grant bits are then the union of
 * a few prepared bit sets (one per tag it carries, its name, the prefix lengths in use, {@code *}),
 * instead of every selector of every grant tested against every tag of the node.
 *
 * <p>Cost: building it is O(selectors); a node's bits are O((tags + prefix lengths in use + 2) x
 * grants / 64) word operations, whatever the size of the policy's selector lists. This is what keeps
 * a 500-grant policy of 64-selector sides as cheap per node as a small one (the naive test was
 * O(grants x selectors x tags) per node, up to 2 million string comparisons). Immutable; shared by
 * the threads that read it.
 */
final class GrantIndex {
  static final GrantIndex EMPTY = new GrantIndex(PolicyDocument.EMPTY);

  private final int grants;
  private final Side src;
  private final Side dst;

  /** One side (source or destination) of every grant. */
  private static final class Side {
    final BitSet any = new BitSet();
    final Map<String, BitSet> tags = new HashMap<>();
    final Map<String, BitSet> names = new HashMap<>();
    /** Per prefix length 0..32: the prefix's base address -> grants; null where no selector has that length. */
    @SuppressWarnings("unchecked")
    final Map<Integer, BitSet>[] prefixes = new Map[33];
    int[] lengths = new int[0];

    void add(Selector s, int grant) {
      if (s instanceof Any) {
        any.set(grant);
      } else if (s instanceof Tag t) {
        tags.computeIfAbsent(t.text(), k -> new BitSet()).set(grant);
      } else if (s instanceof Host h) {
        names.computeIfAbsent(h.text(), k -> new BitSet()).set(grant);
      } else if (s instanceof Prefix p) {
        if (prefixes[p.bits()] == null) prefixes[p.bits()] = new HashMap<>();
        prefixes[p.bits()].computeIfAbsent(p.base(), k -> new BitSet()).set(grant);
      }
    }

    void seal() {
      List<Integer> in = new ArrayList<>();
      for (int b = 0; b <= 32; b++) if (prefixes[b] != null) in.add(b);
      lengths = in.stream().mapToInt(Integer::intValue).toArray();
    }

    BitSet of(String name, String[] tags, int address) {
      BitSet out = (BitSet) any.clone();
      BitSet byName = names.get(name);
      if (byName != null) out.or(byName);
      for (String t : tags) {
        BitSet byTag = this.tags.get(t);
        if (byTag != null) out.or(byTag);
      }
      for (int bits : lengths) {
        int base = bits == 0 ? 0 : address & (-1 << (32 - bits));
        BitSet byPrefix = prefixes[bits].get(base);
        if (byPrefix != null) out.or(byPrefix);
      }
      return out;
    }

    /** Bit sets a node's bits may be the union of: what {@link #of} costs per node, in prepared sets. */
    int prepared() {
      int n = 1 + tags.size() + names.size();
      for (int b : lengths) n += prefixes[b].size();
      return n;
    }
  }

  GrantIndex(PolicyDocument policy) {
    this.grants = policy.grants().size();
    this.src = new Side();
    this.dst = new Side();
    for (Grant g : policy.grants()) {
      for (Selector s : g.src()) src.add(s, g.index());
      for (Selector s : g.dst()) dst.add(s, g.index());
    }
    src.seal();
    dst.seal();
  }

  int grants() {
    return grants;
  }

  /** The grants whose source names the node. */
  BitSet src(String name, String[] tags, int address) {
    return src.of(name, tags, address);
  }

  /** The grants whose destination names the node. */
  BitSet dst(String name, String[] tags, int address) {
    return dst.of(name, tags, address);
  }

  /** How many prefix lengths are in use on either side: part of the per-node cost. */
  int prefixLengths() {
    return src.lengths.length + dst.lengths.length;
  }

  /** How many prepared bit sets the index holds (for the work estimate; O(selectors)). */
  int prepared() {
    return src.prepared() + dst.prepared();
  }

  /** The grants allowing {@code proto}/{@code port}. */
  static BitSet allowing(PolicyDocument policy, String proto, int port) {
    BitSet out = new BitSet();
    for (Grant g : policy.grants()) if (g.allows(proto, port)) out.set(g.index());
    return out;
  }
}
