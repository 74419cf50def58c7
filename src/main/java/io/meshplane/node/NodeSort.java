package io.meshplane.node;

import java.util.Arrays;

/**
 * The inventory's orders (API.md §8, {@code sort=}): a key and its direction, the id breaking ties, so
 * a keyset cursor holds the key and the id of the last item. {@code status} is the heartbeat order:
 * a node's status is a monotone function of its last heartbeat (never = pending, older than
 * {@code stale_after} = stale, else online), so {@code sort=status} is {@code sort=heartbeat} with the
 * nodes never heard from first, as the oldest heartbeats.
 */
enum NodeSort {
  ID("id", "id", false),
  NAME("name", "name", false),
  NAME_DESC("-name", "name", true),
  HEARTBEAT("heartbeat", NodeSort.HEARTBEAT_KEY, false),
  HEARTBEAT_DESC("-heartbeat", NodeSort.HEARTBEAT_KEY, true),
  STATUS("status", NodeSort.HEARTBEAT_KEY, false),
  STATUS_DESC("-status", NodeSort.HEARTBEAT_KEY, true);

  /** A node never heard from sorts as the oldest heartbeat of all. */
  static final String HEARTBEAT_KEY = "COALESCE(heartbeat_at, '-infinity'::timestamptz)";

  public final String wire;
  final String key;
  final boolean descending;

  NodeSort(String wire, String key, boolean descending) {
    this.wire = wire;
    this.key = key;
    this.descending = descending;
  }

  /** The order named {@code s}, or null. */
  public static NodeSort of(String s) {
    return Arrays.stream(values()).filter(v -> v.wire.equals(s)).findFirst().orElse(null);
  }

  boolean byHeartbeat() {
    return key.equals(HEARTBEAT_KEY);
  }

  /** {@code ORDER BY} of the list. */
  String orderBy() {
    String dir = descending ? " DESC" : "";
    return this == ID ? "id" + dir : key + dir + ", id" + dir;
  }
}
