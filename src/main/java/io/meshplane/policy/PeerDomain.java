package io.meshplane.policy;

import io.meshplane.policy.PolicyDocument.Any;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.Prefix;
import io.meshplane.policy.PolicyDocument.Selector;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.StampedLock;

/** One team+environment: its policy and its nodes. */
final class PeerDomain {
  final String team;
  final String env;
  final StampedLock lock = new StampedLock();
  PolicyDocument policy = PolicyDocument.EMPTY;
  /** The policy's selectors inverted (tag, name, prefix -> grants): a node's bits in O(tags x grants / 64). */
  GrantIndex index = GrantIndex.EMPTY;
  long policyVersion;
  final Map<String, PeerMember> members = new HashMap<>();
  PeerMember[] byIdx = new PeerMember[16];
  private final List<Integer> freeIdx = new ArrayList<>();
  private int nextIdx;
  /** Per grant: the nodes in its src, in its dst. */
  BitSet[] srcMembers = new BitSet[0];
  BitSet[] dstMembers = new BitSet[0];
  Map<List<BitSet>, PeerClass> classes = new HashMap<>();

  PeerDomain(String team, String env) {
    this.team = team;
    this.env = env;
  }

  PeerMember newMember(String id, String name, int address, String[] tags, String key, String[] endpoints, String relay, boolean online,
      long seq) {
    int idx = freeIdx.isEmpty() ? nextIdx++ : freeIdx.remove(freeIdx.size() - 1);
    if (idx >= byIdx.length) byIdx = Arrays.copyOf(byIdx, Math.max(idx + 1, byIdx.length * 2));
    PeerMember m = new PeerMember(id, idx, name, address, tags, key, endpoints, relay, online);
    m.peersJoin = seq;
    m.aclJoin = seq;
    members.put(id, m);
    byIdx[idx] = m;
    return m;
  }

  /** Sets the node's grant bits from the policy. */
  void match(PeerMember m) {
    BitSet[] bits = bits(m, index);
    m.srcOf = bits[0];
    m.dstOf = bits[1];
  }

  /** The node's grant bits under the policy {@code index} was built from: {src, dst}. */
  static BitSet[] bits(PeerMember m, GrantIndex index) {
    return new BitSet[] {index.src(m.name, m.tags, m.address), index.dst(m.name, m.tags, m.address)};
  }

  /**
   * A node arrived (old bits empty) or its bits changed: the grants' member sets follow, each class
   * re-tests whether the node is its peer, classes whose sources changed recompile their rules, and
   * the node moves to its class.
   */
  void memberChanged(long seq, PeerMember m, BitSet oldSrc, BitSet oldDst, PeerModel model) {
    if (m.cls == null) match(m);
    for (int g = 0; g < srcMembers.length; g++) {
      srcMembers[g].set(m.idx, m.srcOf.get(g));
      dstMembers[g].set(m.idx, m.dstOf.get(g));
    }
    BitSet srcChanged = (BitSet) oldSrc.clone();
    srcChanged.xor(m.srcOf);
    for (PeerClass c : classes.values()) {
      boolean now = c.srcBits.intersects(m.dstOf) || c.dstBits.intersects(m.srcOf);
      if (now != c.peers.get(m.idx)) {
        c.peers.set(m.idx, now);
        c.logged(seq, m.id);
      }
      if (c.dstBits.intersects(srcChanged)) compileRules(c, seq);
    }
    PeerClass old = m.cls;
    if (old != null) leave(old);
    m.cls = classFor(m.srcOf, m.dstOf, seq, model);
    m.cls.size++;
    m.peersJoin = seq;
    m.aclJoin = seq;
  }

  void remove(long seq, String id) {
    PeerMember m = members.remove(id);
    if (m == null) return;
    for (int g = 0; g < srcMembers.length; g++) {
      srcMembers[g].clear(m.idx);
      dstMembers[g].clear(m.idx);
    }
    leave(m.cls);
    for (PeerClass c : classes.values()) {
      if (c.peers.get(m.idx)) {
        c.peers.clear(m.idx);
        c.logged(seq, m.id);
      }
      if (c.dstBits.intersects(m.srcOf)) compileRules(c, seq);
    }
    byIdx[m.idx] = null;
    freeIdx.add(m.idx);
  }

  private void leave(PeerClass c) {
    if (--c.size == 0) classes.remove(List.of(c.srcBits, c.dstBits));
  }

  private PeerClass classFor(BitSet src, BitSet dst, long seq, PeerModel model) {
    List<BitSet> key = List.of(src, dst);
    PeerClass c = classes.get(key);
    if (c != null) return c;
    c = new PeerClass(src, dst);
    c.peers = peersOf(src, dst);
    c.peersVersion = seq;
    c.floor = seq;
    compileRules(c, seq);
    c.aclVersion = seq;
    classes.put(key, c);
    model.classBuilds.increment();
    return c;
  }

  /** The nodes in the dst of the class's source grants and in the src of its destination grants. */
  BitSet peersOf(BitSet src, BitSet dst) {
    return peersOf(src, dst, srcMembers, dstMembers);
  }

  static BitSet peersOf(BitSet src, BitSet dst, BitSet[] srcMembers, BitSet[] dstMembers) {
    BitSet p = new BitSet();
    for (int g = src.nextSetBit(0); g >= 0; g = src.nextSetBit(g + 1)) p.or(dstMembers[g]);
    for (int g = dst.nextSetBit(0); g >= 0; g = dst.nextSetBit(g + 1)) p.or(srcMembers[g]);
    return p;
  }

  /**
   * The class's inbound rules: per grant it is a destination of, the sources (each source node's
   * address, the grant's prefixes as written, or {@code *}) and the grant's ports; identical rules
   * once. Takes {@code seq} as the ACL version when the encoded rules changed.
   */
  void compileRules(PeerClass c, long seq) {
    compileRules(c, seq, policy, srcMembers);
  }

  void compileRules(PeerClass c, long seq, PolicyDocument policy, BitSet[] srcMembers) {
    // written by hand (this runs under the domain's lock, once per change of a class's sources, over
    // every source node): the same text as {"src":[…],"ports":[…]} objects encoded by Vert.x
    StringBuilder rules = new StringBuilder("[");
    Set<String> seen = new java.util.HashSet<>();
    for (int gi = c.dstBits.nextSetBit(0); gi >= 0; gi = c.dstBits.nextSetBit(gi + 1)) {
      Grant g = policy.grants().get(gi);
      String src = sources(g, srcMembers[gi]);
      if (src == null) continue;
      StringBuilder rule = new StringBuilder(src.length() + 64).append("{\"src\":[").append(src).append("],\"ports\":[");
      for (int i = 0; i < g.ports().size(); i++) {
        if (i > 0) rule.append(',');
        rule.append('"').append(g.ports().get(i).text()).append('"');
      }
      String r = rule.append("]}").toString();
      if (seen.add(r)) {
        if (rules.length() > 1) rules.append(',');
        rules.append(r);
      }
    }
    String encoded = rules.append(']').toString();
    if (!encoded.equals(c.rules)) {
      c.rules = encoded;
      c.aclVersion = Math.max(c.aclVersion, seq);
    }
  }

  /**
   * A grant's sources as JSON array items (without the brackets), or null when it has none: {@code "*"}
   * when its source is {@code *}; else its prefixes as written, then each source node's /32 not inside
   * one of them, in address order.
   */
  private String sources(Grant g, BitSet members) {
    List<Prefix> prefixes = new ArrayList<>();
    for (Selector s : g.src()) {
      if (s instanceof Any) return "\"*\"";
      if (s instanceof Prefix p) prefixes.add(p);
    }
    // addresses with the sign bit flipped sort as unsigned numbers; the low bits index nothing, so
    // sort (address, idx) pairs packed in a long
    long[] keyed = new long[members.cardinality()];
    int n = 0;
    for (int i = members.nextSetBit(0); i >= 0; i = members.nextSetBit(i + 1)) {
      PeerMember m = byIdx[i];
      boolean covered = false;
      for (Prefix p : prefixes) covered |= p.matches(null, null, m.address);
      if (!covered) keyed[n++] = ((long) (m.address ^ Integer.MIN_VALUE) << 32) | i;
    }
    Arrays.sort(keyed, 0, n);
    if (prefixes.isEmpty() && n == 0) return null;
    StringBuilder out = new StringBuilder(n * 20 + prefixes.size() * 24);
    for (Prefix p : prefixes) {
      if (out.length() > 0) out.append(',');
      out.append('"').append(p.text()).append('"');
    }
    int last = -1;
    for (int k = 0; k < n; k++) {
      PeerMember m = byIdx[(int) keyed[k]];
      if (m.address == last && k > 0) continue; // one address, one entry
      last = m.address;
      if (out.length() > 0) out.append(',');
      out.append(m.sourceJson);
    }
    return out.toString();
  }

  /**
   * Recomputes the domain under {@code next} (version {@code version}): every node's bits once, every
   * class once, all of it into new structures, reading the current ones only. Returns what installs
   * the result (to run under the write lock): the policy, the grants' member sets, the classes and
   * each node's bits and class. A new class whose nodes all come from one old class with the same
   * peers (or rules) keeps that class's version and history: nodes whose answer the change does not
   * touch keep their versions. When its peers differ by at most {@link #PeerModel.POLICY_DELTA_MAX} nodes, it
   * takes over the old history and logs the difference at {@code seq}: its nodes get a delta (the
   * peers gained as changed, the peers lost as removed) sized by what the policy changed for them,
   * not by the class. A larger difference, or a class whose nodes come from several old classes,
   * starts afresh (a full set).
   */
  Runnable rebuild(long seq, PeerModel model, PolicyDocument next, long version) {
    int grants = next.grants().size();
    BitSet[] newSrcMembers = new BitSet[grants];
    BitSet[] newDstMembers = new BitSet[grants];
    for (int g = 0; g < grants; g++) {
      newSrcMembers[g] = new BitSet();
      newDstMembers[g] = new BitSet();
    }
    GrantIndex nextIndex = new GrantIndex(next);
    List<PeerMember> all = new ArrayList<>(members.values());
    BitSet[][] bits = new BitSet[all.size()][];
    for (int i = 0; i < bits.length; i++) {
      PeerMember m = all.get(i);
      bits[i] = bits(m, nextIndex);
      for (int g = bits[i][0].nextSetBit(0); g >= 0; g = bits[i][0].nextSetBit(g + 1)) newSrcMembers[g].set(m.idx);
      for (int g = bits[i][1].nextSetBit(0); g >= 0; g = bits[i][1].nextSetBit(g + 1)) newDstMembers[g].set(m.idx);
    }
    Map<List<BitSet>, PeerClass> newClasses = new HashMap<>();
    PeerClass[] classOf = new PeerClass[all.size()];
    Map<PeerClass, PeerClass> sourceOf = new HashMap<>();
    Set<PeerClass> mixed = new java.util.HashSet<>();
    for (int i = 0; i < bits.length; i++) {
      PeerMember m = all.get(i);
      List<BitSet> key = List.of(bits[i][0], bits[i][1]);
      PeerClass c = newClasses.get(key);
      if (c == null) {
        c = new PeerClass(bits[i][0], bits[i][1]);
        c.peers = peersOf(c.srcBits, c.dstBits, newSrcMembers, newDstMembers);
        c.peersVersion = seq;
        c.floor = seq;
        compileRules(c, seq, next, newSrcMembers);
        c.aclVersion = seq;
        newClasses.put(key, c);
        model.classBuilds.increment();
      }
      PeerClass was = m.cls;
      if (was != null) {
        PeerClass first = sourceOf.putIfAbsent(c, was);
        if (first != null && first != was) mixed.add(c);
      } else {
        mixed.add(c);
      }
      classOf[i] = c;
      c.size++;
    }
    for (Map.Entry<PeerClass, PeerClass> e : sourceOf.entrySet()) {
      PeerClass c = e.getKey();
      PeerClass was = e.getValue();
      if (mixed.contains(c)) continue;
      if (c.peers.equals(was.peers)) {
        c.inherit(was);
      } else {
        BitSet diff = (BitSet) was.peers.clone();
        diff.xor(c.peers);
        if (diff.cardinality() <= PeerModel.POLICY_DELTA_MAX) {
          c.inherit(was);
          for (int i = diff.nextSetBit(0); i >= 0; i = diff.nextSetBit(i + 1)) {
            PeerMember p = i < byIdx.length ? byIdx[i] : null;
            if (p != null) c.logged(seq, p.id);
          }
          c.peersVersion = seq;
        }
      }
      if (c.rules.equals(was.rules)) c.aclVersion = was.aclVersion;
    }
    return () -> {
      policy = next;
      index = nextIndex;
      policyVersion = version;
      srcMembers = newSrcMembers;
      dstMembers = newDstMembers;
      classes = newClasses;
      for (int i = 0; i < bits.length; i++) {
        PeerMember m = all.get(i);
        m.srcOf = bits[i][0];
        m.dstOf = bits[i][1];
        m.cls = classOf[i];
      }
    };
  }
}
