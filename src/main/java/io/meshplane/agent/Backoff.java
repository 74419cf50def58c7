package io.meshplane.agent;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * When to try again. After the n-th failed round the wait is drawn uniformly ("full jitter") between
 * half the base and the envelope {@code min(cap, base * 2^(n-1))}, the cap being {@code max(interval,
 * 60 s)}: a fleet that lost its coordinator spreads its retries instead of returning in waves, and no
 * single node ever tries more than twice per base period, however long the outage. A node whose MeshCA
 * certificate is due and runs out retries under a lower cap ({@link AgentPki#retryCapMs}), so that it
 * renews soon after the coordinator returns. Accepted heartbeats follow the interval with ±10 % jitter.
 */
final class Backoff {
  static final long DEFAULT_BASE_MS = 1000;
  static final long MIN_CAP_MS = 60_000;

  private final long baseMs;
  private final DoubleSupplier random;

  Backoff(long baseMs, DoubleSupplier random) {
    if (baseMs < 2) throw new IllegalArgumentException("base must be at least 2 ms");
    this.baseMs = baseMs;
    this.random = random;
  }

  static Backoff standard() {
    return new Backoff(DEFAULT_BASE_MS, () -> ThreadLocalRandom.current().nextDouble());
  }

  long baseMs() {
    return baseMs;
  }

  /** The cap of the back-off for this heartbeat interval. */
  static long capMs(long intervalMs) {
    return Math.max(intervalMs, MIN_CAP_MS);
  }

  /** The most a wait after {@code failures} failed rounds can be. */
  long envelopeMs(int failures, long intervalMs) {
    return envelope(failures, capMs(intervalMs));
  }

  private long envelope(int failures, long cap) {
    int doublings = Math.min(Math.max(failures, 1) - 1, 40);
    return doublings >= 40 || (baseMs << doublings) > cap || (baseMs << doublings) < 0 ? cap : baseMs << doublings;
  }

  /** The wait after {@code failures} (>= 1) failed rounds in a row. */
  long delayMs(int failures, long intervalMs) {
    return delayMs(failures, intervalMs, capMs(intervalMs));
  }

  /** As above under a lower cap (at least the base): a node whose certificate runs out retries sooner. */
  long delayMs(int failures, long intervalMs, long capMs) {
    long floor = baseMs / 2;
    long envelope = envelope(failures, Math.max(baseMs, Math.min(capMs, capMs(intervalMs))));
    return floor + (long) (random.getAsDouble() * (envelope - floor));
  }

  /** The wait until the next heartbeat after an accepted one: the interval ± 10 %. */
  long intervalMs(long intervalMs) {
    return Math.max(1, (long) (intervalMs * (0.9 + 0.2 * random.getAsDouble())));
  }

  /** A uniformly spread start within one interval (a fleet started at once does not beat in step). */
  long spreadMs(long intervalMs) {
    return (long) (random.getAsDouble() * intervalMs);
  }
}
