package io.meshplane.watch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The admission bucket and the Retry-After it gives a crowd (on a clock the test steps). */
class AdmissionTest {
  long now = 1_000_000_000L;

  @Test
  void aCrowdBeyondTheBurstIsToldToComeBackSpreadOverTheSecondsItTakesToAdmitIt() {
    Admission a = new Admission(100, () -> now);
    int admitted = 0;
    int[] told = new int[12];
    for (int i = 0; i < 1000; i++) {
      if (a.take()) {
        admitted++;
      } else {
        int s = a.retryAfterSeconds();
        told[Math.min(s, told.length - 1)]++;
      }
    }
    assertEquals(100, admitted, "the burst");
    // 900 refused at 100 a second: 100 told 1 s, 100 told 2 s, ... 100 told 9 s; none told more
    for (int s = 1; s <= 9; s++) assertEquals(100, told[s], "told " + s + " s");
    assertEquals(0, told[10] + told[11]);
  }

  @Test
  void theQueueDrainsWithTimeAndTheRateRefills() {
    Admission a = new Admission(10, () -> now);
    for (int i = 0; i < 10; i++) assertTrue(a.take());
    assertFalse(a.take());
    for (int i = 0; i < 50; i++) a.retryAfterSeconds();
    now += 3_000_000_000L; // 3 s later: 30 tokens (capped at the burst of 10), and the queue is 2 s long
    assertEquals(3, a.retryAfterSeconds(), "the 51st place: 5.1 s after the first refusal, 2.1 s from now");
    for (int i = 0; i < 10; i++) assertTrue(a.take(), "refilled up to the burst");
    assertFalse(a.take());
    now += 60_000_000_000L;
    assertEquals(1, a.retryAfterSeconds(), "an empty queue: at least 1 s");
  }

  @Test
  void noRefusalIsToldToWaitLongerThanTheCap() {
    Admission a = new Admission(1, () -> now);
    int last = 0;
    for (int i = 0; i < 1000; i++) last = a.retryAfterSeconds();
    assertEquals(Admission.MAX_RETRY_AFTER_S, last);
  }
}
