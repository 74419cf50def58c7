package io.meshplane.watch;

/**
 * How many new streams this replica accepts per second: a token bucket of {@code perSecond} tokens
 * that refills continuously, so the death of a replica becomes a bounded trickle of reconnections on
 * the survivors, not a storm. Thread-safe (the event loops take tokens).
 */
final class Admission {
  private final double perSecond;
  private final double burst;
  private double tokens;
  private long last;

  Admission(int perSecond) {
    this.perSecond = perSecond;
    this.burst = perSecond;
    this.tokens = perSecond;
    this.last = System.nanoTime();
  }

  /** Takes a token; false when this second's are gone. */
  synchronized boolean take() {
    long now = System.nanoTime();
    tokens = Math.min(burst, tokens + (now - last) / 1e9 * perSecond);
    last = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }

  /** Whole seconds until a token is there again (at least 1), for Retry-After. */
  synchronized int retryAfterSeconds() {
    return (int) Math.max(1, Math.ceil((1 - tokens) / perSecond));
  }
}
