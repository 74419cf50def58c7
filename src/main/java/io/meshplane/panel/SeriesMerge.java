package io.meshplane.panel;

import io.meshplane.common.Times;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.List;

/**
 * Merges the replicas' rings of one resolution into the answer of {@code GET /overview/series}: for each
 * bucket of the window, the per-replica figures summed over every ring that holds the bucket (a replica
 * that was not running then adds nothing), and the cluster-wide node counts taken from ONE ring (the
 * first, in the order given, that sampled them: normally only the oldest replica does). A bucket no ring
 * holds is {@code null} in every series: a gap, never a zero.
 */
final class SeriesMerge {
  static final List<String> NAMES = List.of("heartbeats_per_second", "online", "stale", "pending", "operations_succeeded",
      "operations_failed", "operations_expired");

  private SeriesMerge() {}

  /**
   * @param window the window's name ({@code 1h}, {@code 24h})
   * @param rings the replicas' rings of this resolution, all of the same step, in a stable order
   * @param stepMs the buckets' length
   * @param points how many buckets the window has
   * @param last the window's last bucket (the newest complete one)
   */
  static JsonObject merge(String window, List<SeriesRing> rings, long stepMs, int points, long last) {
    JsonArray timestamps = new JsonArray();
    JsonArray[] series = new JsonArray[NAMES.size()];
    for (int i = 0; i < series.length; i++) series[i] = new JsonArray();
    double stepS = stepMs / 1000.0;
    for (long b = last - points + 1; b <= last; b++) {
      long at = b * stepMs;
      timestamps.add(stepMs % 1000 == 0 ? (Number) (at / 1000) : (Number) (at / 1000.0));
      long hb = 0;
      long ok = 0;
      long failed = 0;
      long expired = 0;
      boolean any = false;
      long[] counts = null;
      for (SeriesRing r : rings) {
        long[] v = r.get(b);
        if (v == null) continue;
        any = true;
        hb += v[SeriesRing.HEARTBEATS];
        ok += v[SeriesRing.SUCCEEDED];
        failed += v[SeriesRing.FAILED];
        expired += v[SeriesRing.EXPIRED];
        if (counts == null && v[SeriesRing.ONLINE] >= 0) counts = v;
      }
      series[0].add(any ? Math.round(hb / stepS * 100) / 100.0 : null);
      series[1].add(counts == null ? null : counts[SeriesRing.ONLINE]);
      series[2].add(counts == null ? null : counts[SeriesRing.STALE]);
      series[3].add(counts == null ? null : counts[SeriesRing.PENDING]);
      series[4].add(any ? ok : null);
      series[5].add(any ? failed : null);
      series[6].add(any ? expired : null);
    }
    JsonObject named = new JsonObject();
    for (int i = 0; i < series.length; i++) named.put(NAMES.get(i), series[i]);
    return new JsonObject()
        .put("window", window)
        .put("step_s", stepSeconds(stepMs))
        .put("from", Times.format(Instant.ofEpochMilli((last - points + 1) * stepMs)))
        .put("to", Times.format(Instant.ofEpochMilli((last + 1) * stepMs)))
        .put("scope", "mesh")
        .put("timestamps", timestamps)
        .put("series", named);
  }

  /** Whole seconds as an integer, a shorter step (tests) as a decimal. */
  private static Number stepSeconds(long stepMs) {
    return stepMs % 1000 == 0 ? (Number) (stepMs / 1000) : (Number) (stepMs / 1000.0);
  }

  /** The answer for a caller who does not see the whole mesh: the window's shape, no figures, and why. */
  static JsonObject withheld(String window, long stepMs, int points, long last) {
    JsonObject named = new JsonObject();
    for (String n : NAMES) named.put(n, new JsonArray());
    return new JsonObject()
        .put("window", window)
        .put("step_s", stepSeconds(stepMs))
        .put("from", Times.format(Instant.ofEpochMilli((last - points + 1) * stepMs)))
        .put("to", Times.format(Instant.ofEpochMilli((last + 1) * stepMs)))
        .put("scope", "withheld")
        .put("detail", "the series are sampled for the whole mesh only; a caller whose team or environment is not * sees the "
            + "current figures of their own boundary on GET /api/v1/overview")
        .put("timestamps", new JsonArray())
        .put("series", named);
  }
}
