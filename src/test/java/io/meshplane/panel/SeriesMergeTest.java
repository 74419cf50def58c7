package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The series' ring and merge, without a cluster: what is summed, what is taken once, and the gaps. */
class SeriesMergeTest {
  private static final long STEP = 10_000;

  @Test
  void perReplicaFiguresAreSummedAndTheMeshCountsAreTakenFromOneReplica() {
    SeriesRing a = new SeriesRing(STEP, 360);
    SeriesRing b = new SeriesRing(STEP, 360);
    a.add(100, 300, 1, 0, 0);
    b.add(100, 200, 0, 1, 2);
    // both sampled the mesh's counts in bucket 100 (a change of oldest member): one is taken, not both
    a.counts(100, 40, 2, 1);
    b.counts(100, 40, 2, 1);
    a.add(101, 50, 0, 0, 0);
    b.counts(101, 41, 1, 1); // only b sampled the counts of 101
    JsonObject s = SeriesMerge.merge("1h", List.of(decoded(a, 101), decoded(b, 101)), STEP, 360, 101);
    JsonObject series = s.getJsonObject("series");
    assertEquals(360, s.getJsonArray("timestamps").size());
    for (String name : SeriesMerge.NAMES) assertEquals(360, series.getJsonArray(name).size(), name);
    assertEquals(101 * 10L, s.getJsonArray("timestamps").getLong(359));
    assertEquals(10, s.getInteger("step_s"));
    assertEquals(50.0, at(series, "heartbeats_per_second", 358), "(300 + 200) heartbeats over 10 s, summed over the replicas");
    assertEquals(40L, ((Number) at(series, "online", 358)).longValue(), "counted once, not 80");
    assertEquals(2L, ((Number) at(series, "stale", 358)).longValue());
    assertEquals(1L, ((Number) at(series, "operations_succeeded", 358)).longValue());
    assertEquals(1L, ((Number) at(series, "operations_failed", 358)).longValue());
    assertEquals(2L, ((Number) at(series, "operations_expired", 358)).longValue());
    assertEquals(5.0, at(series, "heartbeats_per_second", 359), "only a sampled 101");
    assertEquals(41L, ((Number) at(series, "online", 359)).longValue(), "b's counts, the only ones of 101");
    // a bucket nobody sampled is a gap in every series, never a zero
    for (String name : SeriesMerge.NAMES) assertNull(at(series, name, 0), name);
    assertEquals("mesh", s.getString("scope"));
  }

  @Test
  void theRingKeepsItsSizeAndReadsBackWhatItWrote() {
    SeriesRing r = new SeriesRing(STEP, 360);
    for (long bucket = 0; bucket < 1000; bucket++) {
      r.add(bucket, 1000 + bucket, bucket % 3, 0, 0);
      if (bucket % 2 == 0) r.counts(bucket, 100_000, 12, 3);
    }
    byte[] bytes = r.encode(999);
    assertTrue(bytes.length < 4_000, "a full ring of a busy replica is a few KB: " + bytes.length);
    SeriesRing back = SeriesRing.decode(bytes);
    assertNull(back.get(639), "older than the ring's reach");
    assertEquals(1000 + 640, back.get(640)[SeriesRing.HEARTBEATS]);
    assertEquals(100_000, back.get(998)[SeriesRing.ONLINE]);
    assertEquals(-1, back.get(999)[SeriesRing.ONLINE], "999 had no counts");
    assertThrows(IllegalArgumentException.class, () -> SeriesRing.decode(java.util.Arrays.copyOf(bytes, bytes.length / 2)));
  }

  @Test
  void aNarrowCallerGetsTheWindowsShapeWithoutFigures() {
    JsonObject s = SeriesMerge.withheld("24h", 300_000, 288, 5000);
    assertEquals("withheld", s.getString("scope"));
    assertEquals(300, s.getInteger("step_s"));
    assertEquals(new JsonArray(), s.getJsonArray("timestamps"));
    assertTrue(s.getString("detail").contains("whole mesh"), s.getString("detail"));
  }

  private static SeriesRing decoded(SeriesRing r, long newest) {
    return SeriesRing.decode(r.encode(newest));
  }

  private static Object at(JsonObject series, String name, int i) {
    return series.getJsonArray(name).getValue(i);
  }
}
