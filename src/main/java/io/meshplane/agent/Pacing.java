package io.meshplane.agent;

/**
 * Where a session sends its next heartbeat and when: the coordinator URL in use (failover to the next
 * one when this one is at fault), the interval the coordinator answered, and the back-off after
 * failures. Part of an {@link AgentSession}; not thread-safe.
 */
final class Pacing {
  private int intervalS;
  /** A command was executed on the last answer: its result goes out soon, not an interval later. */
  private boolean resultsWaiting;
  private int url;
  private int tried;
  private int failures;

  /** Takes the interval of an answer ({@code interval_s}, 1 s to a day; anything else is ignored). */
  void answeredInterval(Object intervalS) {
    if (intervalS instanceof Number n && n.longValue() >= 1 && n.longValue() <= 86_400) this.intervalS = n.intValue();
  }

  /** The answer made the node execute a command: the next heartbeat goes out soon. */
  void resultsWaiting() {
    resultsWaiting = true;
  }

  /**
   * Takes the mark {@link #resultsWaiting()} left: a stream answer made the node execute a command, and its
   * owner sends the heartbeat with the result at once (the interval's short wait is then not needed).
   */
  boolean takeResultsWaiting() {
    boolean w = resultsWaiting;
    resultsWaiting = false;
    return w;
  }

  /** An owner hint named a configured coordinator: requests go there from now on (a new round of failover). */
  void useCoordinator(int index) {
    url = index;
    tried = 0;
  }

  /** The answered interval in seconds, 0 before any answer. */
  int answeredIntervalS() {
    return intervalS;
  }

  int coordinator() {
    return url;
  }

  int failures() {
    return failures;
  }

  long intervalMs(long overrideMs) {
    if (overrideMs > 0) return overrideMs;
    return intervalS > 0 ? intervalS * 1000L : AgentSession.DEFAULT_INTERVAL_MS;
  }

  /** See {@link AgentSession#afterSuccess}. */
  long afterSuccess(Backoff backoff, long intervalOverrideMs) {
    failures = 0;
    tried = 0;
    long interval = intervalMs(intervalOverrideMs);
    if (resultsWaiting) {
      resultsWaiting = false;
      return backoff.intervalMs(Math.min(AgentSession.REPORT_SOON_MS, interval));
    }
    return backoff.intervalMs(interval);
  }

  /** See {@link AgentSession#afterFailure}. */
  long afterFailure(Reply r, Backoff backoff, int coordinators, long intervalOverrideMs) {
    return afterFailure(r, backoff, coordinators, intervalOverrideMs, Long.MAX_VALUE);
  }

  /**
   * As above, with {@code urgentCapMs}: the longest wait the node's state allows (its certificate due
   * for renewal runs out: {@link AgentPki#retryCapMs}); it lowers the back-off's cap and a
   * {@code Retry-After}, never below the back-off's floor.
   */
  long afterFailure(Reply r, Backoff backoff, int coordinators, long intervalOverrideMs, long urgentCapMs) {
    if (r.coordinatorsFault() && coordinators > 1) {
      url = (url + 1) % coordinators;
      if (++tried < coordinators) return 0;
    }
    tried = 0;
    failures++;
    long interval = intervalMs(intervalOverrideMs);
    long cap = Math.min(Backoff.capMs(interval), Math.max(backoff.baseMs(), urgentCapMs));
    long wait = backoff.delayMs(failures, interval, cap);
    if (r.retryAfterMs() > wait) wait = Math.min(r.retryAfterMs(), cap);
    return wait;
  }
}
