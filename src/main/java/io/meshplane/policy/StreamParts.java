package io.meshplane.policy;

import io.vertx.core.buffer.Buffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A node's {@code "relay":…,"peers":{…},"acl":{…}} for a watch stream, as parts of one message: the
 * same content as {@link PeerAnswers#answer} (the same versions, deltas and full sets), but the parts
 * that every node of a class with the same versions receives are encoded once per dispatch pass (kept
 * in the pass's {@code shared} map) and handed to each of them as the same bytes. A policy change
 * that alters every node's rules costs one encoding per class, not one per node; a full peer set is
 * encoded once per class and each member gets two slices of it around its own entry.
 */
final class StreamParts {
  private record DeltaKey(PeerClass cls, long known, long version) {}

  private record Delta(Set<String> ids, Buffer bytes) {}

  private record FullKey(PeerClass cls, long version) {}

  /** A class's full peer set, encoded once: the bytes and where each member's entry starts and ends. */
  private record Full(Buffer bytes, int[] idx, int[] start, int[] end) {}

  private record AclKey(PeerClass cls, long version) {}

  private final PeerModel model;
  private final PeerAnswers answers;

  StreamParts(PeerModel model, PeerAnswers answers) {
    this.model = model;
    this.answers = answers;
  }

  /**
   * Adds the node's parts to {@code parts}; returns its current versions {peers, acl}, or null when the
   * model does not hold the node (the parts then say so as a heartbeat answer would).
   */
  long[] parts(PeerDomain d, String nodeId, long knownPeers, long knownAcl, Map<Object, Object> shared, List<Buffer> parts) {
    if (d == null) {
      Buffer out = Buffer.buffer(96);
      answers.answer(null, nodeId, knownPeers, knownAcl, out);
      parts.add(out);
      return null;
    }
    long stamp = d.lock.readLock();
    try {
      PeerMember m = d.members.get(nodeId);
      if (m == null) {
        // as PeerAnswers#answer says it (not called here: the read lock is not reentrant once a writer waits)
        parts.add(Buffer.buffer("\"relay\":\"\",\"peers\":{\"version\":0,\"items\":[]},\"acl\":{\"version\":0,\"rules\":[]}"));
        return null;
      }
      PeerClass c = m.cls;
      long pv = m.peersVersion();
      long av = m.aclVersion();
      Buffer head = Buffer.buffer(64).appendString("\"relay\":").appendString(m.relayJson).appendString(",\"peers\":");
      if (knownPeers >= pv) {
        PeerAnswers.unchanged(head, knownPeers);
        parts.add(head);
      } else if (knownPeers > 0 && knownPeers >= m.peersJoin && knownPeers >= c.floor) {
        parts.add(head);
        delta(d, m, c, knownPeers, pv, shared, parts);
      } else {
        parts.add(head);
        full(d, m, c, pv, shared, parts);
      }
      if (knownAcl >= av) {
        Buffer acl = Buffer.buffer(48).appendString(",\"acl\":");
        PeerAnswers.unchanged(acl, knownAcl);
        parts.add(acl);
      } else {
        parts.add((Buffer) shared.computeIfAbsent(new AclKey(c, av), k -> Buffer.buffer(c.rules.length() + 40)
            .appendString(",\"acl\":{\"version\":").appendString(Long.toString(av)).appendString(",\"rules\":")
            .appendString(c.rules).appendString("}")));
      }
      return new long[] {pv, av};
    } finally {
      d.lock.unlockRead(stamp);
    }
  }

  private void delta(PeerDomain d, PeerMember m, PeerClass c, long known, long version, Map<Object, Object> shared, List<Buffer> parts) {
    model.deltaPeerAnswers.increment();
    Delta delta = (Delta) shared.computeIfAbsent(new DeltaKey(c, known, version), k -> {
      Set<String> ids = c.since(known);
      Buffer out = Buffer.buffer(256).appendString("{\"version\":").appendString(Long.toString(version)).appendString(",\"changed\":[");
      StringBuilder removed = new StringBuilder();
      boolean first = true;
      for (String id : ids) {
        PeerMember p = d.members.get(id);
        if (p != null && c.peers.get(p.idx)) {
          if (!first) out.appendString(",");
          out.appendString(answers.entry(p));
          model.peerEntriesSent.increment();
          first = false;
        } else {
          if (removed.length() > 0) removed.append(',');
          removed.append('"').append(id).append('"');
        }
      }
      out.appendString("],\"removed\":[").appendString(removed.toString()).appendString("]}");
      return new Delta(ids, out);
    });
    if (delta.ids().contains(m.id)) {
      // the node's own entry changed: its delta leaves itself out, so it is its own
      Buffer own = Buffer.buffer(256);
      answers.peers(d, m, version, known, own);
      parts.add(own);
    } else {
      parts.add(delta.bytes());
    }
  }

  private void full(PeerDomain d, PeerMember m, PeerClass c, long version, Map<Object, Object> shared, List<Buffer> parts) {
    model.fullPeerAnswers.increment();
    Full full = (Full) shared.computeIfAbsent(new FullKey(c, version), k -> {
      int n = c.peers.cardinality();
      int[] idx = new int[n];
      int[] start = new int[n];
      int[] end = new int[n];
      Buffer out = Buffer.buffer(64 + n * 200).appendString("{\"version\":").appendString(Long.toString(version)).appendString(",\"items\":[");
      int j = 0;
      for (int i = c.peers.nextSetBit(0); i >= 0; i = c.peers.nextSetBit(i + 1)) {
        if (j > 0) out.appendString(",");
        idx[j] = i;
        start[j] = out.length();
        out.appendString(answers.entry(d.byIdx[i]));
        model.peerEntriesSent.increment();
        end[j] = out.length();
        j++;
      }
      out.appendString("]}");
      return new Full(out, idx, start, end);
    });
    int at = java.util.Arrays.binarySearch(full.idx(), m.idx);
    if (at < 0) {
      parts.add(full.bytes());
      return;
    }
    // a node is never its own peer: the class's set around its own entry (and one comma)
    Buffer b = full.bytes();
    int n = full.idx().length;
    if (n == 1) {
      parts.add(b.slice(0, full.start()[at]));
      parts.add(b.slice(full.end()[at], b.length()));
    } else if (at < n - 1) {
      parts.add(b.slice(0, full.start()[at]));
      parts.add(b.slice(full.start()[at + 1], b.length()));
    } else {
      parts.add(b.slice(0, full.start()[at] - 1));
      parts.add(b.slice(full.end()[at], b.length()));
    }
  }

  /** For tests: the parts joined. */
  static Buffer join(List<Buffer> parts) {
    Buffer out = Buffer.buffer();
    for (Buffer b : new ArrayList<>(parts)) out.appendBuffer(b);
    return out;
  }
}
