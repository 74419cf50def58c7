package io.meshplane.agent;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * How long the edge's WAF evaluations took, as a Prometheus histogram ({@code mesh_waf_eval_seconds}):
 * cumulative counts per upper bound, the count and the sum. Recorded on the WAF's worker threads.
 */
final class WafTimes {
  /** Upper bounds in seconds: 25 µs to 50 ms (a managed-set evaluation is about 0.1 ms; the target is a p99 of 0.2 ms). */
  static final double[] BUCKETS = {0.000025, 0.00005, 0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05};
  private final AtomicLongArray buckets = new AtomicLongArray(BUCKETS.length);
  private final LongAdder count = new LongAdder();
  private final LongAdder nanos = new LongAdder();
  private final LongAdder cpuNanos = new LongAdder();

  /** One evaluation: {@code n} nanoseconds of wall time on the worker, {@code cpu} of its thread's CPU (-1: not measured). */
  void record(long n, long cpu) {
    count.increment();
    nanos.add(n);
    if (cpu > 0) cpuNanos.add(cpu);
    double s = n / 1e9;
    for (int i = 0; i < BUCKETS.length; i++) {
      if (s <= BUCKETS[i]) {
        buckets.incrementAndGet(i);
        break;
      }
    }
  }

  double cpuSeconds() {
    return cpuNanos.sum() / 1e9;
  }

  long count() {
    return count.sum();
  }

  double sumSeconds() {
    return nanos.sum() / 1e9;
  }

  /** Evaluations that took at most {@code BUCKETS[i]} (cumulative, as Prometheus counts them). */
  long atMost(int i) {
    long c = 0;
    for (int k = 0; k <= i; k++) c += buckets.get(k);
    return c;
  }
}
