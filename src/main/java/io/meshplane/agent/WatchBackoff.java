package io.meshplane.agent;

import java.util.function.DoubleSupplier;

/**
 * When a node re-opens its watch stream (API.md §11 "The watch stream"): after the n-th failed or short
 * attempt in a row the wait is {@code min(30 s, 1 s × 2^(n-1))} ± 50 % (uniform jitter); a
 * {@code Retry-After} (or a {@code close} line's {@code retry_after_s}) replaces the back-off, with up to 50 %
 * more so that a fleet refused in the same second does not come back in the same second (the replica's
 * Retry-After is the agent's place in its admission queue: a run of refusals must not push an agent to
 * the 30 s cap while the queue moves on); never shorter than the first step; a coordinator
 * without the route (404, or an answer that is not a stream) is asked again only every 5 min (± 10 %).
 * A stream that stayed open for at least {@link #HEALTHY_MS} ends the run of failures: the next attempt
 * is the first again. Pure: the caller keeps the clock and the timers.
 */
final class WatchBackoff {
  static final long BASE_MS = 1_000;
  static final long CAP_MS = 30_000;
  /** How often a coordinator that has no watch route (an older server) is asked again. */
  static final long NO_ROUTE_MS = 5 * 60_000;
  /** A stream that lived this long counts as a success: the back-off starts over after it. */
  static final long HEALTHY_MS = 60_000;
  /** The most a {@code Retry-After} can make a node wait (a larger one is taken as this). */
  static final long MAX_RETRY_AFTER_MS = 10 * 60_000;

  private final long baseMs;
  private final long capMs;
  private final DoubleSupplier random;
  private int failures;

  WatchBackoff(long baseMs, long capMs, DoubleSupplier random) {
    if (baseMs < 2 || capMs < baseMs) throw new IllegalArgumentException("need 2 <= base <= cap");
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.random = random;
  }

  /** Failed or short attempts in a row. */
  int failures() {
    return failures;
  }

  /** The envelope's middle after {@code n} (>= 1) failures: {@code min(cap, base × 2^(n-1))}. */
  long middleMs(int n) {
    int doublings = Math.min(Math.max(n, 1) - 1, 30);
    long m = baseMs << doublings;
    return m > capMs || m <= 0 ? capMs : m;
  }

  /**
   * The stream could not be opened, or ended: the wait before the next attempt.
   *
   * @param openForMs how long the stream was open (0 when it never opened); {@link #HEALTHY_MS} or more
   *     starts the run of failures over
   * @param retryAfterMs what the coordinator asked for ({@code Retry-After}, {@code retry_after_s}), 0 if nothing
   * @param noRoute the coordinator has no watch route (404, or not a stream): ask again rarely
   */
  long next(long openForMs, long retryAfterMs, boolean noRoute) {
    if (openForMs >= HEALTHY_MS) failures = 0;
    failures++;
    if (noRoute) return (long) (NO_ROUTE_MS * (0.9 + 0.2 * random.getAsDouble()));
    if (retryAfterMs > 0) {
      // the coordinator named the agent's place in its admission queue: that, not the run of failures, says when; never
      // sooner than the first step of the back-off (a coordinator that asks for 0.1 s does not get a busy loop)
      long asked = Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
      return Math.max((long) (baseMs * (0.5 + random.getAsDouble())), (long) (asked * (1 + 0.5 * random.getAsDouble())));
    }
    return Math.max(1, (long) (middleMs(failures) * (0.5 + random.getAsDouble())));
  }

  /** Forgets the failures (a stream delivered its first answer and lived, or the node moved on purpose). */
  void reset() {
    failures = 0;
  }
}
