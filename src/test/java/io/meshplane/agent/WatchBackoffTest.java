package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/** When a node re-opens its watch stream: doubling from 1 s to 30 s ± 50 %, Retry-After, no route, a healthy stream. */
class WatchBackoffTest {
  static WatchBackoff pinned(double r) {
    return new WatchBackoff(WatchBackoff.BASE_MS, WatchBackoff.CAP_MS, () -> r);
  }

  @Test
  void theWaitDoublesFromOneSecondToThirtyWithinPlusMinusHalf() {
    WatchBackoff low = pinned(0.0);
    WatchBackoff high = pinned(0.999999);
    long[] middle = {1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000};
    for (long m : middle) {
      assertEquals(m / 2, low.next(0, 0, false), "the envelope's bottom: half the middle");
      long h = high.next(0, 0, false);
      assertTrue(h >= m * 3 / 2 - 1 && h <= m * 3 / 2, "the envelope's top: 1.5 × the middle, got " + h + " for " + m);
    }
    WatchBackoff real = new WatchBackoff(WatchBackoff.BASE_MS, WatchBackoff.CAP_MS, () -> ThreadLocalRandom.current().nextDouble());
    for (int i = 1; i <= 40; i++) {
      long w = real.next(0, 0, false);
      long m = real.middleMs(i);
      assertTrue(w >= m / 2 && w <= m * 3 / 2, "attempt " + i + ": " + w);
      assertTrue(w <= 45_000, "never more than 45 s without a Retry-After");
    }
  }

  @Test
  void aRetryAfterIsHonouredWithJitterAboveItNeverBelow() {
    WatchBackoff b = pinned(0.0);
    assertEquals(7_000, b.next(0, 7_000, false), "at least what the coordinator asked");
    WatchBackoff top = pinned(0.999999);
    long w = top.next(0, 7_000, false);
    assertTrue(w >= 10_499 && w <= 10_500, "up to 50 % more, so a fleet refused in one second spreads: " + w);
    assertEquals(2_000, pinned(0.0).next(0, 100, false) * 4, "a small Retry-After does not shorten the first step");
    WatchBackoff refusedOften = pinned(0.0);
    for (int i = 0; i < 8; i++) refusedOften.next(0, 0, false);
    assertEquals(2_000, refusedOften.next(0, 2_000, false), "after a run of failures, the queue place named, not the 15-45 s of the back-off");
    assertEquals(WatchBackoff.MAX_RETRY_AFTER_MS, pinned(0.0).next(0, 86_400_000, false), "an absurd Retry-After is capped at 10 min");
  }

  @Test
  void aCoordinatorWithoutTheRouteIsAskedAgainOnlyEveryFiveMinutes() {
    assertEquals(270_000, pinned(0.0).next(0, 0, true));
    long w = pinned(0.999999).next(0, 0, true);
    assertTrue(w > 329_000 && w <= 330_000, "5 min ± 10 %: " + w);
  }

  @Test
  void aStreamThatLivedAMinuteStartsTheBackOffOver() {
    WatchBackoff b = pinned(0.0);
    for (int i = 0; i < 6; i++) b.next(5_000, 0, false); // streams that died young keep doubling
    assertEquals(6, b.failures());
    assertEquals(15_000, b.next(59_999, 0, false), "still young: the 7th wait, 30 s - 50 %");
    assertEquals(500, b.next(WatchBackoff.HEALTHY_MS, 0, false), "a healthy stream's end: the first wait again");
    assertEquals(1, b.failures());
    b.reset();
    assertEquals(0, b.failures());
  }
}
