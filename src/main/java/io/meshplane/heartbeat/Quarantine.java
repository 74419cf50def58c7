package io.meshplane.heartbeat;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Nodes whose row PostgreSQL refused (a data error in that row alone, found by splitting the batch it
 * was in). While a node is here the write-behind writes its row on its own, never inside a batch with
 * other nodes, and when the whole row is still refused it writes the heartbeat time alone, so the
 * node's liveness still reaches the database while the fields it cannot store are held back. A node
 * leaves when a whole row of it is written again, or when its live entry is gone. Read by
 * {@code /readyz} (details of the {@code writebehind} check, which stays UP: one bad row is not an
 * outage). Thread-safe; one per replica.
 */
final class Quarantine {
  /** Beyond this many, further bad rows are still isolated by splitting, just not remembered. */
  static final int MAX = 10_000;
  private static final int SHOWN = 10;

  /** What was refused and why. */
  public record Entry(LiveNode value, String reason, long sinceMillis) {}

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  /** Puts a node here; true when it was not here before (the caller logs and counts it once). */
  boolean enter(String id, LiveNode value, String reason) {
    if (entries.size() >= MAX && !entries.containsKey(id)) return true;
    return entries.putIfAbsent(id, new Entry(value, reason, System.currentTimeMillis())) == null;
  }

  boolean contains(String id) {
    return !entries.isEmpty() && entries.containsKey(id);
  }

  boolean leave(String id) {
    return entries.remove(id) != null;
  }

  java.util.Set<String> ids() {
    return java.util.Set.copyOf(entries.keySet());
  }

  public int size() {
    return entries.size();
  }

  public Entry get(String id) {
    return entries.get(id);
  }

  /** For {@code /readyz}: how many rows are held back, and (up to 10) which nodes. */
  public JsonObject details() {
    List<String> ids = entries.keySet().stream().sorted().limit(SHOWN).toList();
    return new JsonObject().put("quarantined", entries.size()).put("quarantined_nodes", new JsonArray(ids));
  }
}
