package io.meshplane.meshca;

import com.hazelcast.core.HazelcastInstance;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.EstimationProbe;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.grid.hazelcast.Bucket4jHazelcast;
import io.vertx.core.Context;
import java.time.Duration;

/**
 * The cluster-wide signing budget, {@code meshca.max_signatures_per_s}: one Bucket4j token bucket kept in
 * a Hazelcast map (each take is one entry processor on the member that owns the key, so every replica
 * draws from the same bucket). Its capacity is one second's worth, refilled evenly, so a new fleet or a
 * rotation is spread over time instead of a burst. The key names the rate: replicas configured
 * differently during a rolling change do not share a bucket of another size.
 */
final class SigningBudget {
  static final String MAP = "meshplane.meshca.budget";

  private final Bucket bucket;

  SigningBudget(HazelcastInstance hz, int perSecond) {
    ProxyManager<String> buckets = Bucket4jHazelcast.<String>entryProcessorBasedBuilder(hz.getMap(MAP))
        .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
        .build();
    BucketConfiguration config = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(perSecond).refillGreedy(perSecond, Duration.ofSeconds(1))).build();
    this.bucket = buckets.builder().build("signatures:" + perSecond, () -> config);
  }

  /**
   * Takes one signature from the budget: 0 when taken, else the seconds (at least 1) until one can be.
   * Blocking (a Hazelcast call): on the signing pool, never on an event loop.
   */
  int take() {
    if (Context.isOnEventLoopThread()) throw new IllegalStateException("SigningBudget.take on an event loop");
    ConsumptionProbe p = bucket.tryConsumeAndReturnRemaining(1);
    if (p.isConsumed()) return 0;
    return seconds(p.getNanosToWaitForRefill());
  }

  /**
   * Whether a signature could be taken now, without taking it: 0 when it could, else the seconds (at
   * least 1) until one can be. A CSR is checked (~0.35 ms of CPU) only once this says 0, so the CSRs of
   * a mass issuance that the budget defers cost one entry processor each, not a check each.
   * Blocking (a Hazelcast call): on the signing pool, never on an event loop.
   */
  int waitSeconds() {
    if (Context.isOnEventLoopThread()) throw new IllegalStateException("SigningBudget.waitSeconds on an event loop");
    EstimationProbe p = bucket.estimateAbilityToConsume(1);
    return p.canBeConsumed() ? 0 : seconds(p.getNanosToWaitForRefill());
  }

  private static int seconds(long nanos) {
    return (int) Math.max(1, Math.min(3600, (nanos + 999_999_999L) / 1_000_000_000L));
  }
}
