package io.meshplane.waf;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Token buckets in memory, one per (rule, key), at most {@code maxKeys} of them: past that the bucket
 * used longest ago is forgotten (it starts full again if it comes back), so a flood of distinct keys
 * costs bounded memory. A bucket holds {@code limit} tokens and refills continuously at
 * {@code limit / window}. One lock: a take is a map lookup and a few arithmetic operations.
 */
final class TokenBucketLimiter implements RateLimiter {
  private final int maxKeys;
  private final LongSupplier nanos;
  private final LinkedHashMap<String, Bucket> buckets;

  TokenBucketLimiter(int maxKeys, LongSupplier nanos) {
    this.maxKeys = maxKeys;
    this.nanos = nanos;
    this.buckets = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Bucket> eldest) {
        return size() > TokenBucketLimiter.this.maxKeys;
      }
    };
  }

  TokenBucketLimiter(int maxKeys) {
    this(maxKeys, System::nanoTime);
  }

  @Override
  public synchronized boolean tryAcquire(String ruleId, String key, int limit, Duration window) {
    long now = nanos.getAsLong();
    String k = ruleId + '\u0000' + key;
    Bucket b = buckets.get(k);
    if (b == null) {
      b = new Bucket(limit, now);
      buckets.put(k, b);
    } else {
      double perNano = limit / (double) window.toNanos();
      b.tokens = Math.min(limit, b.tokens + (now - b.last) * perNano);
      b.last = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  private static final class Bucket {
    double tokens;
    long last;

    Bucket(double tokens, long last) {
      this.tokens = tokens;
      this.last = last;
    }
  }

  synchronized int size() {
    return buckets.size();
  }
}
