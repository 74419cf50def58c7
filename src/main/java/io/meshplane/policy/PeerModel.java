package io.meshplane.policy;

import io.meshplane.node.NodeFacts;
import io.meshplane.node.NodeFormats;
import io.meshplane.policy.PolicyDocument.Any;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.Prefix;
import io.meshplane.policy.PolicyDocument.Selector;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.StampedLock;

/**
 * This replica's peer model: per team+environment (a {@link Domain}), the nodes, the compiled policy,
 * and for every node what the heartbeat answers carry (its peers and its inbound rules) with their
 * versions. Built from a snapshot and the change log ({@code mesh_changes}), applied in log order by
 * one thread ({@link ChangeFeed}); read by the event loops answering heartbeats.
 *
 * <h2>Classes instead of pairs</h2>
 * A node's peers and rules depend only on which grants it is a source of and which it is a
 * destination of (two bit sets over the grants). Nodes with the same pair form a {@link PeerClass};
 * the class holds the peer set (a bit set over the domain's nodes), the compiled inbound rules
 * (encoded once), their versions and a short log of recent peer changes. A fleet has as many
 * classes as distinct roles, not as nodes, and no work is ever done per pair of nodes:
 * <ul>
 *   <li>a node's entry changes (endpoints, key, online): each class whose peer set holds it logs it
 *       and takes the change's seq as its version, O(classes);
 *   <li>a node arrives, leaves or is re-tagged: each class's membership of it is re-tested from the
 *       grant bit sets, O(classes), and the rules of classes whose sources it joins or leaves are
 *       recompiled;
 *   <li>a policy change recomputes each node's bits once (O(nodes x grants)) and each class once.
 * </ul>
 *
 * <h2>Versions</h2>
 * A version is a log seq at which the content it labels was current: a node's peers version is the
 * larger of its class's version and the seq at which it joined the class. Every replica that has
 * applied the log to the same point holds the same content for it, so one version names one content
 * on every replica; a replica never answers a version above what it has applied, and answers a known
 * version above that (the node was served by a replica further ahead) with "unchanged" under that
 * same version, never an older one.
 */
final class PeerModel {
  /** Recent peer changes kept per class for delta answers. */
  static final int CLASS_LOG = 1024;
  /** A policy change that changes a class's peers by at most this many nodes is answered as a delta (half the class log). */
  static final int POLICY_DELTA_MAX = CLASS_LOG / 2;

  /** Work counters (deterministic figures for the benchmark). */
  final LongAdder fullPeerAnswers = new LongAdder();
  final LongAdder deltaPeerAnswers = new LongAdder();
  final LongAdder unchangedAnswers = new LongAdder();
  final LongAdder peerEntriesEncoded = new LongAdder();
  final LongAdder peerEntriesSent = new LongAdder();
  final LongAdder classBuilds = new LongAdder();

  /** Replaced whole by {@link #load} (a reload while heartbeats are answered must not show an empty mesh). */
  private volatile Map<String, Domain> domains = new ConcurrentHashMap<>();
  private volatile Map<String, Domain> byNode = new ConcurrentHashMap<>();
  /** Current public key -> node id, over every domain: one key per node (V12), asked by every heartbeat that carries a key. */
  private volatile Map<String, String> keys = new ConcurrentHashMap<>();

  Domain domain(String team, String env) {
    return domains.computeIfAbsent(team + "/" + env, k -> new Domain(team, env));
  }

  Domain domainOf(String nodeId) {
    return byNode.get(nodeId);
  }

  Domain existingDomain(String team, String env) {
    return domains.get(team + "/" + env);
  }

  /** The node whose current key {@code key} is; null when none. */
  String keyHolder(String key) {
    return keys.get(key);
  }

  int nodeCount() {
    return byNode.size();
  }

  int classCount() {
    int n = 0;
    for (Domain d : domains.values()) n += d.classes.size();
    return n;
  }

  /**
   * Replaces everything with a snapshot consistent with {@code seq}: every version is {@code seq}. The
   * new model is built aside and swapped in at once, so answers never see a half-loaded mesh.
   */
  void load(long seq, List<NodeFacts> nodes, Map<String, PolicyDocument> policies, Map<String, Long> policyVersions) {
    Map<String, Domain> newDomains = new ConcurrentHashMap<>();
    Map<String, Domain> newByNode = new ConcurrentHashMap<>();
    Map<String, String> newKeys = new ConcurrentHashMap<>();
    for (NodeFacts n : nodes) if (n.key() != null && !n.key().isEmpty()) newKeys.put(n.key(), n.id());
    Map<String, List<NodeFacts>> byDomain = new HashMap<>();
    for (NodeFacts n : nodes) byDomain.computeIfAbsent(n.team() + "/" + n.environment(), k -> new ArrayList<>()).add(n);
    Set<String> keys = new LinkedHashSet<>(byDomain.keySet());
    keys.addAll(policies.keySet());
    for (String key : keys) {
      int slash = key.indexOf('/');
      Domain d = new Domain(key.substring(0, slash), key.substring(slash + 1));
      newDomains.put(key, d);
      d.policy = policies.getOrDefault(key, PolicyDocument.EMPTY);
      d.policyVersion = policyVersions.getOrDefault(key, 0L);
      for (NodeFacts n : byDomain.getOrDefault(key, List.of())) {
        Member m = d.newMember(n.id(), n.name(), n.address(), n.tags(), n.key(), n.endpoints(), n.relay(), n.online(), seq);
        newByNode.put(m.id, d);
      }
      d.rebuild(seq, this, d.policy, d.policyVersion).run(); // nobody reads this domain yet
    }
    domains = newDomains;
    byNode = newByNode;
    this.keys = newKeys;
  }

  // ---- changes, applied by the feed thread in log order ----

  void enroll(long seq, NodeFacts n) {
    Domain d = domain(n.team(), n.environment());
    long stamp = d.lock.writeLock();
    try {
      if (d.members.containsKey(n.id())) return;
      Member m = d.newMember(n.id(), n.name(), n.address(), n.tags(), n.key(), n.endpoints(), n.relay(), n.online(), seq);
      byNode.put(m.id, d);
      if (n.key() != null && !n.key().isEmpty()) keys.put(n.key(), m.id);
      d.memberChanged(seq, m, new BitSet(), new BitSet(), this);
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  void delete(long seq, String id) {
    Domain d = byNode.remove(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      Member m = d.members.get(id);
      if (m != null && m.key != null) keys.remove(m.key, id);
      d.remove(seq, id);
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  void retag(long seq, String id, String[] tags) {
    Domain d = byNode.get(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      Member m = d.members.get(id);
      if (m == null) return;
      BitSet oldSrc = m.srcOf;
      BitSet oldDst = m.dstOf;
      m.tags = tags;
      d.match(m);
      if (oldSrc.equals(m.srcOf) && oldDst.equals(m.dstOf)) return;
      d.memberChanged(seq, m, oldSrc, oldDst, this);
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  /** A node's entry as peers see it changed: any null argument keeps the current value. */
  void live(long seq, String id, String key, String[] endpoints, Boolean online, String relay) {
    Domain d = byNode.get(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      Member m = d.members.get(id);
      if (m == null) return;
      boolean changed = false;
      if (key != null && !key.equals(m.key)) {
        if (m.key != null) keys.remove(m.key, id);
        keys.put(key, id);
        m.key = key;
        changed = true;
      }
      if (endpoints != null && !Arrays.equals(endpoints, m.endpoints)) {
        m.endpoints = endpoints;
        changed = true;
      }
      if (online != null && online != m.online) {
        m.online = online;
        changed = true;
      }
      if (relay != null && !relay.equals(m.relay)) {
        m.relay(relay);
        changed = true;
      }
      if (!changed) return;
      m.encoded = null;
      for (PeerClass c : d.classes.values()) {
        if (c.peers.get(m.idx)) c.logged(seq, m.id);
      }
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  /**
   * A new policy version: the whole domain is recomputed aside (only this thread changes the model, so
   * it reads the nodes without the lock) and installed under the write lock in one O(nodes) pass of
   * pointer assignments: heartbeats of the domain wait for that pass at most, never for the
   * recomputation (23 ms at 10,000 nodes and 50 grants; longer for larger domains and policies).
   */
  void policy(long seq, String team, String env, long version, PolicyDocument doc) {
    Domain d = domain(team, env);
    if (version <= d.policyVersion) return;
    Runnable install = d.rebuild(seq, this, doc, version);
    long stamp = d.lock.writeLock();
    try {
      install.run();
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  // ---- reads ----

  /** A domain's nodes as of log position {@code position} or later (see {@link #inventory}). */
  record Inventory(long position, List<NodeFacts> nodes) {}

  /**
   * A copy of a team+environment's nodes (what policy tests and previews run against), sorted by id,
   * and the log position it holds every change up to (it may hold later ones too). O(nodes), on the
   * caller's thread (a policy worker), under the domain's read lock: heartbeat answers of the domain
   * read on meanwhile; only the feed's next change to the domain waits for the copy.
   */
  Inventory inventory(String team, String env, long at, io.meshplane.common.Deadline deadline) {
    Domain d = domains.get(team + "/" + env);
    if (d == null) return new Inventory(at, List.of());
    List<NodeFacts> out;
    long stamp = d.lock.readLock();
    try {
      out = new ArrayList<>(d.members.size());
      for (Member m : d.members.values()) {
        out.add(new NodeFacts(m.id, team, env, m.name, m.address, m.key, m.tags, m.relay, m.endpoints, m.online));
        deadline.tick();
      }
    } finally {
      d.lock.unlockRead(stamp);
    }
    out.sort(java.util.Comparator.comparing(NodeFacts::id));
    return new Inventory(at, out);
  }

  /** A node's current versions: {peers, acl}; null when this replica does not know the node. */
  long[] versions(String nodeId) {
    Domain d = byNode.get(nodeId);
    if (d == null) return null;
    long stamp = d.lock.readLock();
    try {
      Member m = d.members.get(nodeId);
      return m == null ? null : new long[] {m.peersVersion(), m.aclVersion()};
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  /** The grants that apply to the node, as {@code acl_matches} text. */
  List<String> matches(String nodeId) {
    Domain d = byNode.get(nodeId);
    if (d == null) return List.of();
    long stamp = d.lock.readLock();
    try {
      Member m = d.members.get(nodeId);
      if (m == null) return List.of();
      List<String> out = new ArrayList<>();
      for (Grant g : d.policy.grants()) {
        boolean src = m.srcOf.get(g.index());
        boolean dst = m.dstOf.get(g.index());
        if (src || dst) out.add(g.match(src, dst));
      }
      return out;
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  /**
   * Appends this node's part of a heartbeat answer to {@code out}: {@code "relay":…,"peers":{…},"acl":{…}}.
   * O(1) when the node's known versions are current; a delta or the full set otherwise. Returns the
   * node's current ACL version (-1: the node is not in this replica's model).
   */
  long answer(String nodeId, long knownPeers, long knownAcl, Buffer out) {
    Domain d = byNode.get(nodeId);
    if (d == null) {
      // not (yet) in this replica's model: an empty mesh at version 0, unless the node knows better
      out.appendString("\"relay\":\"\",\"peers\":");
      if (knownPeers > 0) unchanged(out, knownPeers);
      else out.appendString("{\"version\":0,\"items\":[]}");
      out.appendString(",\"acl\":");
      if (knownAcl > 0) unchanged(out, knownAcl);
      else out.appendString("{\"version\":0,\"rules\":[]}");
      return -1;
    }
    long stamp = d.lock.readLock();
    try {
      Member m = d.members.get(nodeId);
      if (m == null) {
        out.appendString("\"relay\":\"\",\"peers\":{\"version\":0,\"items\":[]},\"acl\":{\"version\":0,\"rules\":[]}");
        return -1;
      }
      out.appendString("\"relay\":").appendString(m.relayJson).appendString(",\"peers\":");
      long pv = m.peersVersion();
      if (knownPeers >= pv) {
        unchanged(out, knownPeers);
      } else {
        peers(d, m, pv, knownPeers, out);
      }
      out.appendString(",\"acl\":");
      long av = m.aclVersion();
      if (knownAcl >= av) {
        unchanged(out, knownAcl);
      } else {
        out.appendString("{\"version\":").appendString(Long.toString(av)).appendString(",\"rules\":")
            .appendString(m.cls.rules).appendString("}");
      }
      if (knownPeers >= pv && knownAcl >= av) unchangedAnswers.increment();
      return av;
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  /**
   * A node's current peers and inbound rules in full, for people (the panel's node page,
   * {@code GET /nodes/{id}/peers}): the same entries as a full heartbeat answer, but not counted as an
   * answer. Null when the model does not hold the node or it lies outside {@code boundary} (a 404,
   * whichever it is).
   */
  JsonObject view(String nodeId, io.meshplane.access.Boundary boundary) {
    Domain d = byNode.get(nodeId);
    if (d == null || !boundary.covers(d.team, d.env)) return null;
    long stamp = d.lock.readLock();
    try {
      Member m = d.members.get(nodeId);
      if (m == null) return null;
      JsonArray items = new JsonArray();
      PeerClass c = m.cls;
      for (int i = c.peers.nextSetBit(0); i >= 0; i = c.peers.nextSetBit(i + 1)) {
        if (i != m.idx) items.add(new JsonObject(entry(d.byIdx[i])));
      }
      return new JsonObject()
          .put("node_id", nodeId)
          .put("relay", m.relay)
          .put("peers", new JsonObject().put("version", m.peersVersion()).put("items", items))
          .put("acl", new JsonObject().put("version", m.aclVersion()).put("rules", new JsonArray(c.rules)));
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  private static void unchanged(Buffer out, long version) {
    out.appendString("{\"version\":").appendString(Long.toString(version)).appendString(",\"unchanged\":true}");
  }

  private void peers(Domain d, Member self, long version, long known, Buffer out) {
    PeerClass c = self.cls;
    out.appendString("{\"version\":").appendString(Long.toString(version));
    if (known > 0 && known >= self.peersJoin && known >= c.floor) {
      // a delta: the peers logged since the node's version, each once
      deltaPeerAnswers.increment();
      Set<String> ids = c.since(known);
      StringBuilder removed = new StringBuilder();
      out.appendString(",\"changed\":[");
      boolean first = true;
      for (String id : ids) {
        if (id.equals(self.id)) continue;
        Member p = d.members.get(id);
        if (p != null && c.peers.get(p.idx)) {
          if (!first) out.appendString(",");
          out.appendString(entry(p));
          peerEntriesSent.increment();
          first = false;
        } else {
          if (removed.length() > 0) removed.append(',');
          removed.append('"').append(id).append('"');
        }
      }
      out.appendString("],\"removed\":[").appendString(removed.toString()).appendString("]}");
      return;
    }
    fullPeerAnswers.increment();
    out.appendString(",\"items\":[");
    boolean first = true;
    for (int i = c.peers.nextSetBit(0); i >= 0; i = c.peers.nextSetBit(i + 1)) {
      if (i == self.idx) continue;
      Member p = d.byIdx[i];
      if (!first) out.appendString(",");
      out.appendString(entry(p));
      peerEntriesSent.increment();
      first = false;
    }
    out.appendString("]}");
  }

  /** The node's peer entry, encoded once per change (the cache is a benign race: any thread computes the same string). */
  private String entry(Member p) {
    String e = p.encoded;
    if (e == null) {
      e = new JsonObject().put("id", p.id).put("name", p.name).put("address", p.addressText + "/32").put("public_key", p.key)
          .put("endpoints", new JsonArray(List.of(p.endpoints))).put("relay", p.relay).put("online", p.online).encode();
      p.encoded = e;
      peerEntriesEncoded.increment();
    }
    return e;
  }

  // ---- the model's parts ----

  /** One node as the model holds it. Mutable, guarded by its domain's lock. */
  static final class Member {
    final String id;
    final int idx;
    final String name;
    final int address;
    final String addressText;
    /** {@code "a.b.c.d/32"} with its quotes: how the node appears as a source in compiled rules. */
    final String sourceJson;
    String[] tags;
    String key;
    String[] endpoints;
    String relay;
    String relayJson;
    boolean online;
    BitSet srcOf = new BitSet();
    BitSet dstOf = new BitSet();
    PeerClass cls;
    /** The seq at which the node's own peers and rules last changed because it moved class. */
    long peersJoin;
    long aclJoin;
    volatile String encoded;

    Member(String id, int idx, String name, int address, String[] tags, String key, String[] endpoints, String relay, boolean online) {
      this.id = id;
      this.idx = idx;
      this.name = name;
      this.address = address;
      this.addressText = ((address >>> 24) & 255) + "." + ((address >>> 16) & 255) + "." + ((address >>> 8) & 255) + "." + (address & 255);
      this.sourceJson = "\"" + addressText + "/32\"";
      this.tags = tags;
      this.key = key;
      this.endpoints = endpoints;
      relay(relay);
      this.online = online;
    }

    void relay(String r) {
      this.relay = r;
      this.relayJson = new JsonArray().add(r).encode();
      this.relayJson = relayJson.substring(1, relayJson.length() - 1);
    }

    long peersVersion() {
      return Math.max(peersJoin, cls.peersVersion);
    }

    long aclVersion() {
      return Math.max(aclJoin, cls.aclVersion);
    }
  }

  /** Nodes with the same source and destination grants: one peer set, one rule set. */
  static final class PeerClass {
    final BitSet srcBits;
    final BitSet dstBits;
    BitSet peers = new BitSet();
    long peersVersion;
    String rules = "[]";
    long aclVersion;
    int size;
    /** Ring of recent peer changes: seq and node id. */
    long[] logSeq = new long[16];
    String[] logId = new String[16];
    int logStart;
    int logCount;
    /** Changes at or below this seq are not in the log: a node known at or below it needs the full set. */
    long floor;

    PeerClass(BitSet srcBits, BitSet dstBits) {
      this.srcBits = srcBits;
      this.dstBits = dstBits;
    }

    void logged(long seq, String id) {
      peersVersion = Math.max(peersVersion, seq);
      if (logCount == logSeq.length && logSeq.length < CLASS_LOG) {
        long[] s = new long[logSeq.length * 2];
        String[] i = new String[logSeq.length * 2];
        for (int k = 0; k < logCount; k++) {
          s[k] = logSeq[(logStart + k) % logSeq.length];
          i[k] = logId[(logStart + k) % logSeq.length];
        }
        logSeq = s;
        logId = i;
        logStart = 0;
      }
      if (logCount == logSeq.length) {
        floor = Math.max(floor, logSeq[logStart]);
        logStart = (logStart + 1) % logSeq.length;
        logCount--;
      }
      int at = (logStart + logCount) % logSeq.length;
      logSeq[at] = seq;
      logId[at] = id;
      logCount++;
    }

    /** Ids logged after {@code seq}, oldest first, each once. */
    Set<String> since(long seq) {
      Set<String> out = new LinkedHashSet<>();
      for (int k = 0; k < logCount; k++) {
        int at = (logStart + k) % logSeq.length;
        if (logSeq[at] > seq) out.add(logId[at]);
      }
      return out;
    }

    /** Takes over an earlier class's history (same peers after a policy change: the node's version stays). */
    void inherit(PeerClass old) {
      peersVersion = old.peersVersion;
      // copies: an old class split into several new ones with its peers may be inherited twice
      logSeq = old.logSeq.clone();
      logId = old.logId.clone();
      logStart = old.logStart;
      logCount = old.logCount;
      floor = old.floor;
    }
  }

  /** One team+environment: its policy and its nodes. */
  static final class Domain {
    final String team;
    final String env;
    final StampedLock lock = new StampedLock();
    PolicyDocument policy = PolicyDocument.EMPTY;
    /** The policy's selectors inverted (tag, name, prefix -> grants): a node's bits in O(tags x grants / 64). */
    GrantIndex index = GrantIndex.EMPTY;
    long policyVersion;
    final Map<String, Member> members = new HashMap<>();
    Member[] byIdx = new Member[16];
    private final List<Integer> freeIdx = new ArrayList<>();
    private int nextIdx;
    /** Per grant: the nodes in its src, in its dst. */
    BitSet[] srcMembers = new BitSet[0];
    BitSet[] dstMembers = new BitSet[0];
    Map<List<BitSet>, PeerClass> classes = new HashMap<>();

    Domain(String team, String env) {
      this.team = team;
      this.env = env;
    }

    Member newMember(String id, String name, int address, String[] tags, String key, String[] endpoints, String relay, boolean online,
        long seq) {
      int idx = freeIdx.isEmpty() ? nextIdx++ : freeIdx.remove(freeIdx.size() - 1);
      if (idx >= byIdx.length) byIdx = Arrays.copyOf(byIdx, Math.max(idx + 1, byIdx.length * 2));
      Member m = new Member(id, idx, name, address, tags, key, endpoints, relay, online);
      m.peersJoin = seq;
      m.aclJoin = seq;
      members.put(id, m);
      byIdx[idx] = m;
      return m;
    }

    /** Sets the node's grant bits from the policy. */
    void match(Member m) {
      BitSet[] bits = bits(m, index);
      m.srcOf = bits[0];
      m.dstOf = bits[1];
    }

    /** The node's grant bits under the policy {@code index} was built from: {src, dst}. */
    static BitSet[] bits(Member m, GrantIndex index) {
      return new BitSet[] {index.src(m.name, m.tags, m.address), index.dst(m.name, m.tags, m.address)};
    }

    /**
     * A node arrived (old bits empty) or its bits changed: the grants' member sets follow, each class
     * re-tests whether the node is its peer, classes whose sources changed recompile their rules, and
     * the node moves to its class.
     */
    void memberChanged(long seq, Member m, BitSet oldSrc, BitSet oldDst, PeerModel model) {
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
      Member m = members.remove(id);
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
        Member m = byIdx[i];
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
        Member m = byIdx[(int) keyed[k]];
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
     * touch keep their versions. When its peers differ by at most {@link #POLICY_DELTA_MAX} nodes, it
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
      List<Member> all = new ArrayList<>(members.values());
      BitSet[][] bits = new BitSet[all.size()][];
      for (int i = 0; i < bits.length; i++) {
        Member m = all.get(i);
        bits[i] = bits(m, nextIndex);
        for (int g = bits[i][0].nextSetBit(0); g >= 0; g = bits[i][0].nextSetBit(g + 1)) newSrcMembers[g].set(m.idx);
        for (int g = bits[i][1].nextSetBit(0); g >= 0; g = bits[i][1].nextSetBit(g + 1)) newDstMembers[g].set(m.idx);
      }
      Map<List<BitSet>, PeerClass> newClasses = new HashMap<>();
      PeerClass[] classOf = new PeerClass[all.size()];
      Map<PeerClass, PeerClass> sourceOf = new HashMap<>();
      Set<PeerClass> mixed = new java.util.HashSet<>();
      for (int i = 0; i < bits.length; i++) {
        Member m = all.get(i);
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
          if (diff.cardinality() <= POLICY_DELTA_MAX) {
            c.inherit(was);
            for (int i = diff.nextSetBit(0); i >= 0; i = diff.nextSetBit(i + 1)) {
              Member p = i < byIdx.length ? byIdx[i] : null;
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
          Member m = all.get(i);
          m.srcOf = bits[i][0];
          m.dstOf = bits[i][1];
          m.cls = classOf[i];
        }
      };
    }
  }

  static int address(String text) {
    return (int) NodeFormats.ipv4(text, 0, text.length());
  }
}
