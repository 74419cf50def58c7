package io.meshplane.agent;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The peers a node holds and their version, kept from full answers ({@code items}) and deltas
 * ({@code changed} entries replace by id, {@code removed} ids go). The reference agent keeps each
 * entry (it would configure its tunnels from them) and an index of their mesh addresses (the ingress
 * edge's {@code exposure: mesh} check); a simulated node keeps only the ids, enough to apply deltas and
 * count.
 */
final class PeerBook {
  private final boolean keepEntries;
  /** id → entry, or id → {@link Boolean#TRUE} when entries are not kept. */
  private final Map<String, Object> byId = new HashMap<>();
  /** A peer's mesh address (no prefix length) → its id; kept with the entries. */
  private final Map<String, String> byAddress = new HashMap<>();
  private long version = -1;

  PeerBook(boolean keepEntries) {
    this.keepEntries = keepEntries;
  }

  long version() {
    return version;
  }

  int size() {
    return byId.size();
  }

  /** A full answer: the set is replaced. Returns the number of entries read. */
  int replace(JsonArray items, long newVersion) {
    byId.clear();
    byAddress.clear();
    int n = put(items);
    version = newVersion;
    return n;
  }

  /** A delta: changed entries replace by id, removed ids go. Returns the number of entries read. */
  int apply(JsonArray changed, JsonArray removed, long newVersion) {
    int n = put(changed);
    if (removed != null) {
      for (Object id : removed) {
        if (id instanceof String s) unindex(s, byId.remove(s));
      }
    }
    version = newVersion;
    return n;
  }

  private int put(JsonArray entries) {
    if (entries == null) return 0;
    int n = 0;
    for (Object o : entries) {
      if (o instanceof JsonObject e && e.getValue("id") instanceof String id) {
        Object before = byId.put(id, keepEntries ? e : Boolean.TRUE);
        if (keepEntries) {
          unindex(id, before);
          String a = address(e);
          if (a != null) byAddress.put(a, id);
        }
        n++;
      }
    }
    return n;
  }

  private void unindex(String id, Object entry) {
    String a = entry instanceof JsonObject e ? address(e) : null;
    if (a != null && id.equals(byAddress.get(a))) byAddress.remove(a);
  }

  /** An entry's mesh address without its prefix length, or null. */
  static String address(JsonObject e) {
    if (!(e.getValue("address") instanceof String a) || a.isEmpty()) return null;
    int slash = a.indexOf('/');
    return slash < 0 ? a : a.substring(0, slash);
  }

  /** The id of the peer at a mesh address ({@code 100.64.0.7}), or null: no peer of this node has it. */
  String idAt(String address) {
    return byAddress.get(address);
  }

  /** The kept entries (empty when entries are not kept). */
  List<JsonObject> entries() {
    List<JsonObject> out = new ArrayList<>();
    if (keepEntries) {
      for (Object o : byId.values()) out.add((JsonObject) o);
    }
    return out;
  }

  /** The kept entry of a peer, or null. */
  JsonObject entry(String id) {
    return byId.get(id) instanceof JsonObject e ? e : null;
  }

  boolean contains(String id) {
    return byId.containsKey(id);
  }
}
