package io.meshplane.common;

import java.time.Duration;

/**
 * When a job of a {@link BoundedWork} pool must stop. Work whose cost grows with its input calls
 * {@link #tick()} in its loops: every {@value #EVERY} ticks it reads the clock and, once past the
 * deadline, stops with 503 {@code deadline_exceeded} and {@code Retry-After}. Not thread-safe: one per
 * job.
 */
public final class Deadline {
  public static final String CODE = "deadline_exceeded";
  static final int EVERY = 1024;

  private final long atNanos;
  private final Duration budget;
  private final String what;
  private int ticks;

  Deadline(long atNanos, Duration budget, String what) {
    this.atNanos = atNanos;
    this.budget = budget;
    this.what = what;
  }

  /** A deadline that never passes (tools, benchmarks, the change feed's own compile). */
  public static Deadline none() {
    return new Deadline(Long.MAX_VALUE, Duration.ofDays(365), "work");
  }

  /** A deadline {@code budget} from now. */
  public static Deadline in(Duration budget, String what) {
    return new Deadline(System.nanoTime() + budget.toNanos(), budget, what);
  }

  /** Counts one unit of work; reads the clock now and then. */
  public void tick() {
    if ((++ticks & (EVERY - 1)) == 0) check();
  }

  /** Reads the clock: throws once the deadline has passed; returns this. */
  public Deadline check() {
    if (atNanos != Long.MAX_VALUE && System.nanoTime() - atNanos > 0) {
      throw Refusal.unavailable(CODE, "the " + what + " did not finish within " + budget.toMillis() + " ms (this replica is busy, "
          + "or the request is close to its budget): retry, or ask for less", 5);
    }
    return this;
  }
}
