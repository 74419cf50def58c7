package io.meshplane.watch;

/**
 * How many new streams this replica accepts per second: a token bucket of {@code perSecond} tokens
 * that refills continuously, so the death of a replica becomes a bounded trickle of reconnections on
 * the survivors, not a storm. A refusal also books the refused agent a place in the queue: its
 * {@code Retry-After} is the time at which the bucket, at its rate, reaches it (the k-th refusal of a
 * crowd is told about k / perSecond seconds, at most {@link #MAX_RETRY_AFTER_S}), so the crowd that a
 * dead replica sends comes back spread over the seconds it takes to admit it, not all again one second
 * later (where most of it would be refused again and back off further). Thread-safe (the event loops
 * take tokens).
 */
final class Admission {
  /** The longest wait a refusal names. */
  static final int MAX_RETRY_AFTER_S = 120;

  private final double perSecond;
  private final double burst;
  private final LongClock clock;
  private double tokens;
  private long last;
  /** When the last place handed out by a refusal comes up (nanos on the clock; before now when the queue is empty). */
  private long queuedUntil;

  /** The clock, in nanoseconds ({@code System::nanoTime}); a test steps its own. */
  interface LongClock {
    long nanos();
  }

  Admission(int perSecond) {
    this(perSecond, System::nanoTime);
  }

  Admission(int perSecond, LongClock clock) {
    this.perSecond = perSecond;
    this.burst = perSecond;
    this.tokens = perSecond;
    this.clock = clock;
    this.last = clock.nanos();
    this.queuedUntil = last;
  }

  /** Takes a token; false when this second's are gone (then {@link #retryAfterSeconds} books a place). */
  synchronized boolean take() {
    long now = clock.nanos();
    tokens = Math.min(burst, tokens + (now - last) / 1e9 * perSecond);
    last = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }

  /**
   * For a refusal's Retry-After: books the next place in the queue (one per 1 / perSecond after the
   * last place booked, or after now) and answers the whole seconds until it, at least 1.
   */
  synchronized int retryAfterSeconds() {
    long now = clock.nanos();
    long step = (long) (1e9 / perSecond);
    long cap = now + MAX_RETRY_AFTER_S * 1_000_000_000L;
    queuedUntil = Math.min(cap, Math.max(queuedUntil, now) + step);
    return (int) Math.max(1, Math.min(MAX_RETRY_AFTER_S, (long) Math.ceil((queuedUntil - now) / 1e9)));
  }
}
