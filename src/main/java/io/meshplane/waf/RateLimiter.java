package io.meshplane.waf;

import java.time.Duration;

/**
 * Where rate-limit rules count: in memory on one edge ({@link TokenBucketLimiter}), or later shared.
 * Implementations are thread-safe and bounded.
 */
interface RateLimiter {
  /**
   * Takes one token from the bucket of {@code key} under {@code ruleId}, which holds {@code limit} tokens
   * refilled over {@code window}; false when the bucket is empty (the request is over the limit).
   */
  boolean tryAcquire(String ruleId, String key, int limit, Duration window);

  /** A limiter that never limits (for previews that must not count). */
  RateLimiter NONE = (ruleId, key, limit, window) -> true;
}
