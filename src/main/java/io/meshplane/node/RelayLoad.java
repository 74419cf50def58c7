package io.meshplane.node;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Nodes per relay, for the least-loaded assignment at enrollment. Counting the {@code nodes} table in
 * every enrollment cost O(nodes): at 50,000 nodes under a heartbeat load the count took ~0.7 s of
 * PostgreSQL per enrollment (the table's heartbeat updates keep its pages from being all-visible, so
 * the index-only count visits the heap), and enrollment slowed from ~160/s to ~55/s as the fleet
 * grew. Here the whole mesh is counted with one {@code GROUP BY} at most every {@link #REFRESH_MS},
 * off the enrollment's transaction, and between two counts this replica adds its own assignments.
 * Enrollments on other replicas in the last seconds are not seen until the next count, so replicas
 * enrolling at the same moment can lean on the same relay for a few seconds; the next count evens it
 * out. Deleted nodes and relay moves count from the next count on. Thread-safe (every event loop's
 * enrollments share one instance).
 */
final class RelayLoad {
  static final long REFRESH_MS = 10_000;
  private static final String COUNT = "SELECT relay, count(*) AS n FROM nodes WHERE relay <> '' GROUP BY relay";

  private final Pool pool;
  /** The last count plus this replica's assignments since. Guarded by this. */
  private Map<String, Long> load = new HashMap<>();
  /** When the last count was taken (0: never). Guarded by this. */
  private long countedAt;
  /** The count under way, or null. Guarded by this. */
  private Future<Void> counting;

  RelayLoad(Pool pool) {
    this.pool = pool;
  }

  /** The least-loaded of {@code candidates} (ties: the first), counted as assigned; "" when there are none. */
  Future<String> pick(List<String> candidates) {
    if (candidates.isEmpty()) return Future.succeededFuture("");
    return fresh().map(v -> choose(candidates));
  }

  private synchronized String choose(List<String> candidates) {
    String best = candidates.get(0);
    long least = load.getOrDefault(best, 0L);
    for (String c : candidates) {
      long n = load.getOrDefault(c, 0L);
      if (n < least) {
        least = n;
        best = c;
      }
    }
    load.merge(best, 1L, Long::sum);
    return best;
  }

  /** Counts again when the last count is older than {@link #REFRESH_MS}; only the very first count is waited for. */
  private synchronized Future<Void> fresh() {
    if (System.currentTimeMillis() - countedAt < REFRESH_MS) return Future.succeededFuture();
    if (counting == null) {
      counting = pool.query(COUNT).execute().map(rows -> {
        Map<String, Long> counted = new HashMap<>();
        for (Row r : rows) counted.put(r.getString("relay"), r.getLong("n"));
        synchronized (this) {
          load = counted;
          countedAt = System.currentTimeMillis();
          counting = null;
        }
        return (Void) null;
      }).recover(t -> {
        synchronized (this) {
          counting = null;
        }
        return Future.failedFuture(t);
      });
    }
    // the first count is needed; later ones refresh in the background while the last one serves
    return countedAt == 0 ? counting : Future.succeededFuture();
  }
}
