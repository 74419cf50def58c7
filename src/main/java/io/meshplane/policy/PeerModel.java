package io.meshplane.policy;

import io.meshplane.node.NodeFacts;
import io.meshplane.node.NodeFormats;
import io.meshplane.policy.PolicyDocument.Grant;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * This replica's peer model: per team+environment (a {@link PeerDomain}), the nodes, the compiled policy,
 * and for every node what the heartbeat answers carry (its peers and its inbound rules) with their
 * versions. Built from a snapshot and the change log ({@code mesh_changes}), applied in log order by
 * one thread (the change log's feed, through {@link PeerFollower}); read by the event loops answering heartbeats.
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

  private final PeerAnswers answers = new PeerAnswers(this);
  private final StreamParts streamParts = new StreamParts(this, answers);

  /** Replaced whole by {@link #load} (a reload while heartbeats are answered must not show an empty mesh). */
  private volatile Map<String, PeerDomain> domains = new ConcurrentHashMap<>();
  private volatile Map<String, PeerDomain> byNode = new ConcurrentHashMap<>();
  /** Current public key -> node id, over every domain: one key per node (V12), asked by every heartbeat that carries a key. */
  private volatile Map<String, String> keys = new ConcurrentHashMap<>();

  PeerDomain domain(String team, String env) {
    return domains.computeIfAbsent(team + "/" + env, k -> new PeerDomain(team, env));
  }

  PeerDomain domainOf(String nodeId) {
    return byNode.get(nodeId);
  }

  PeerDomain existingDomain(String team, String env) {
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
    for (PeerDomain d : domains.values()) n += d.classes.size();
    return n;
  }

  /**
   * Replaces everything with a snapshot consistent with {@code seq}: every version is {@code seq}. The
   * new model is built aside and swapped in at once, so answers never see a half-loaded mesh.
   */
  void load(long seq, List<NodeFacts> nodes, Map<String, PolicyDocument> policies, Map<String, Long> policyVersions) {
    Map<String, PeerDomain> newDomains = new ConcurrentHashMap<>();
    Map<String, PeerDomain> newByNode = new ConcurrentHashMap<>();
    Map<String, String> newKeys = new ConcurrentHashMap<>();
    for (NodeFacts n : nodes) if (n.key() != null && !n.key().isEmpty()) newKeys.put(n.key(), n.id());
    Map<String, List<NodeFacts>> byDomain = new HashMap<>();
    for (NodeFacts n : nodes) byDomain.computeIfAbsent(n.team() + "/" + n.environment(), k -> new ArrayList<>()).add(n);
    Set<String> keys = new LinkedHashSet<>(byDomain.keySet());
    keys.addAll(policies.keySet());
    for (String key : keys) {
      int slash = key.indexOf('/');
      PeerDomain d = new PeerDomain(key.substring(0, slash), key.substring(slash + 1));
      newDomains.put(key, d);
      d.policy = policies.getOrDefault(key, PolicyDocument.EMPTY);
      d.policyVersion = policyVersions.getOrDefault(key, 0L);
      for (NodeFacts n : byDomain.getOrDefault(key, List.of())) {
        PeerMember m = d.newMember(n.id(), n.name(), n.address(), n.tags(), n.key(), n.endpoints(), n.relay(), n.online(), seq);
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
    PeerDomain d = domain(n.team(), n.environment());
    long stamp = d.lock.writeLock();
    try {
      if (d.members.containsKey(n.id())) return;
      PeerMember m = d.newMember(n.id(), n.name(), n.address(), n.tags(), n.key(), n.endpoints(), n.relay(), n.online(), seq);
      byNode.put(m.id, d);
      if (n.key() != null && !n.key().isEmpty()) keys.put(n.key(), m.id);
      d.memberChanged(seq, m, new BitSet(), new BitSet(), this);
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  void delete(long seq, String id) {
    PeerDomain d = byNode.remove(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      PeerMember m = d.members.get(id);
      if (m != null && m.key != null) keys.remove(m.key, id);
      d.remove(seq, id);
    } finally {
      d.lock.unlockWrite(stamp);
    }
  }

  void retag(long seq, String id, String[] tags) {
    PeerDomain d = byNode.get(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      PeerMember m = d.members.get(id);
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
    PeerDomain d = byNode.get(id);
    if (d == null) return;
    long stamp = d.lock.writeLock();
    try {
      PeerMember m = d.members.get(id);
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
    PeerDomain d = domain(team, env);
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
    PeerDomain d = domains.get(team + "/" + env);
    if (d == null) return new Inventory(at, List.of());
    List<NodeFacts> out;
    long stamp = d.lock.readLock();
    try {
      out = new ArrayList<>(d.members.size());
      for (PeerMember m : d.members.values()) {
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
    PeerDomain d = byNode.get(nodeId);
    if (d == null) return null;
    long stamp = d.lock.readLock();
    try {
      PeerMember m = d.members.get(nodeId);
      return m == null ? null : new long[] {m.peersVersion(), m.aclVersion()};
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  /** The grants that apply to the node, as {@code acl_matches} text. */
  List<String> matches(String nodeId) {
    PeerDomain d = byNode.get(nodeId);
    if (d == null) return List.of();
    long stamp = d.lock.readLock();
    try {
      PeerMember m = d.members.get(nodeId);
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
   * Appends this node's part of a heartbeat answer to {@code out} ({@link PeerAnswers#answer}); returns
   * the node's current ACL version (-1: the node is not in this replica's model).
   */
  long answer(String nodeId, long knownPeers, long knownAcl, Buffer out) {
    return answers.answer(byNode.get(nodeId), nodeId, knownPeers, knownAcl, out);
  }

  /**
   * A node's part of a watch-stream answer, as parts that nodes of the same class share within one
   * dispatch pass ({@link StreamParts}); returns its current versions, null when not in the model.
   */
  long[] streamParts(String nodeId, long knownPeers, long knownAcl, Map<Object, Object> shared, List<Buffer> parts) {
    return streamParts.parts(byNode.get(nodeId), nodeId, knownPeers, knownAcl, shared, parts);
  }

  /** A node's peers and rules in full, for people ({@link PeerAnswers#view}); null when not here or outside {@code boundary}. */
  JsonObject view(String nodeId, io.meshplane.access.Boundary boundary) {
    return answers.view(byNode.get(nodeId), nodeId, boundary);
  }

  static int address(String text) {
    return (int) NodeFormats.ipv4(text, 0, text.length());
  }
}
