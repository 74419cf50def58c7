package io.meshplane.policy;

import io.vertx.core.json.JsonArray;
import java.util.BitSet;

/** One node as the model holds it. Mutable, guarded by its domain's lock. */
final class PeerMember {
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

  PeerMember(String id, int idx, String name, int address, String[] tags, String key, String[] endpoints, String relay, boolean online) {
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
