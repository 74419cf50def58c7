package io.meshplane.policy;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Set;

/**
 * The peer model's answers, encoded by hand where they are hot: a node's {@code relay}, {@code peers}
 * and {@code acl} in a heartbeat answer (O(1) when its versions are current, a delta or the full set
 * otherwise; each peer entry encoded once per change and shared by every answer that carries it), and
 * the same in full for people. Reads the model under the domain's read lock; counts its work in the
 * model's counters.
 */
final class PeerAnswers {
  private final PeerModel model;

  PeerAnswers(PeerModel model) {
    this.model = model;
  }

  /**
   * Appends this node's part of a heartbeat answer to {@code out}: {@code "relay":…,"peers":{…},"acl":{…}}.
   * O(1) when the node's known versions are current; a delta or the full set otherwise. Returns the
   * node's current ACL version (-1: the node is not in this replica's model).
   */
  long answer(PeerDomain d, String nodeId, long knownPeers, long knownAcl, Buffer out) {
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
      PeerMember m = d.members.get(nodeId);
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
      if (knownPeers >= pv && knownAcl >= av) model.unchangedAnswers.increment();
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
  JsonObject view(PeerDomain d, String nodeId, io.meshplane.access.Boundary boundary) {
    if (d == null || !boundary.covers(d.team, d.env)) return null;
    long stamp = d.lock.readLock();
    try {
      PeerMember m = d.members.get(nodeId);
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

  static void unchanged(Buffer out, long version) {
    out.appendString("{\"version\":").appendString(Long.toString(version)).appendString(",\"unchanged\":true}");
  }

  void peers(PeerDomain d, PeerMember self, long version, long known, Buffer out) {
    PeerClass c = self.cls;
    out.appendString("{\"version\":").appendString(Long.toString(version));
    if (known > 0 && known >= self.peersJoin && known >= c.floor) {
      // a delta: the peers logged since the node's version, each once
      model.deltaPeerAnswers.increment();
      Set<String> ids = c.since(known);
      StringBuilder removed = new StringBuilder();
      out.appendString(",\"changed\":[");
      boolean first = true;
      for (String id : ids) {
        if (id.equals(self.id)) continue;
        PeerMember p = d.members.get(id);
        if (p != null && c.peers.get(p.idx)) {
          if (!first) out.appendString(",");
          out.appendString(entry(p));
          model.peerEntriesSent.increment();
          first = false;
        } else {
          if (removed.length() > 0) removed.append(',');
          removed.append('"').append(id).append('"');
        }
      }
      out.appendString("],\"removed\":[").appendString(removed.toString()).appendString("]}");
      return;
    }
    model.fullPeerAnswers.increment();
    out.appendString(",\"items\":[");
    boolean first = true;
    for (int i = c.peers.nextSetBit(0); i >= 0; i = c.peers.nextSetBit(i + 1)) {
      if (i == self.idx) continue;
      PeerMember p = d.byIdx[i];
      if (!first) out.appendString(",");
      out.appendString(entry(p));
      model.peerEntriesSent.increment();
      first = false;
    }
    out.appendString("]}");
  }

  /** The node's peer entry, encoded once per change (the cache is a benign race: any thread computes the same string). */
  String entry(PeerMember p) {
    String e = p.encoded;
    if (e == null) {
      e = new JsonObject().put("id", p.id).put("name", p.name).put("address", p.addressText + "/32").put("public_key", p.key)
          .put("endpoints", new JsonArray(List.of(p.endpoints))).put("relay", p.relay).put("online", p.online).encode();
      p.encoded = e;
      model.peerEntriesEncoded.increment();
    }
    return e;
  }
}
