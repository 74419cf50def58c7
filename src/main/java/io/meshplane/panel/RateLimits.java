package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.grid.hazelcast.Bucket4jHazelcast;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;

/**
 * The panel's rate limits (API.md §17), enforced across all replicas: token buckets kept in a Hazelcast
 * map by Bucket4j (each check is one entry processor on the member that owns the key, so two replicas
 * never count the same bucket twice). Buckets expire from the map once they would be full again, so
 * the map holds only the keys seen recently.
 *
 * <ul>
 *   <li>failed logins per username + source address: {@code panel.login_failures} within
 *       {@code panel.login_window}, refilled all at once when the window that began at the first
 *       failure ends (not evenly: that would allow one more try every window / failures); at zero,
 *       even the right password is answered 429;
 *   <li>login attempts per source address, whatever the username: {@code panel.login_per_address} per
 *       minute (bounds the password-hashing work one address can cause);
 *   <li>API requests per session: {@code panel.api_rate} per second, burst {@code panel.api_burst};
 *   <li>single sign-on's starts across the whole cluster, whatever the address: {@code panel.oidc.max_pending / 2}
 *       at once, refilled evenly by as many per 10 minutes (a pending login's life), so the pending
 *       logins ({@link OidcPending}) never number more than {@code panel.oidc.max_pending}.
 * </ul>
 */
final class RateLimits {
  static final String MAP = "meshplane.panel.ratelimits";

  /** A check's outcome: allowed, or refused with the seconds until a retry can succeed (at least 1). */
  record Verdict(boolean allowed, long retryAfterSeconds) {
    static final Verdict ALLOWED = new Verdict(true, 0);
  }

  private final Vertx vertx;
  private final AsyncProxyManager<String> buckets;
  private final BucketConfiguration loginFailures;
  private final BucketConfiguration loginAddress;
  private final BucketConfiguration api;
  private final BucketConfiguration oidcStarts;
  private final String oidcStartsKey;

  RateLimits(Vertx vertx, HazelcastInstance hz, PanelSettings s) {
    this.vertx = vertx;
    this.buckets = Bucket4jHazelcast.<String>entryProcessorBasedBuilder(hz.getMap(MAP))
        .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
        .build().asAsync();
    this.loginFailures = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(s.loginFailures()).refillIntervally(s.loginFailures(), s.loginWindow())).build();
    this.loginAddress = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(s.loginPerAddressPerMinute()).refillGreedy(s.loginPerAddressPerMinute(), Duration.ofMinutes(1)))
        .build();
    this.api = BucketConfiguration.builder().addLimit(l -> l.capacity(s.apiBurst()).refillGreedy(s.apiRate(), Duration.ofSeconds(1)))
        .build();
    int half = s.oidc().maxPending() / 2;
    this.oidcStarts = BucketConfiguration.builder().addLimit(l -> l.capacity(half).refillGreedy(half, OidcSettings.PENDING_TTL)).build();
    // the key names the bound: replicas configured differently (during a rolling change) do not share a bucket of another size
    this.oidcStartsKey = "oidc-starts:" + s.oidc().maxPending();
  }

  /** Counts one single sign-on start of the whole cluster (the bound on pending logins). */
  Future<Verdict> oidcStart() {
    return consume(bucket(oidcStartsKey, oidcStarts));
  }

  /** Counts one login attempt from {@code address}. */
  Future<Verdict> loginAttempt(String address) {
    return consume(bucket("login-address:" + address, loginAddress));
  }

  /**
   * Takes one of the failures {@code username} may still have from {@code address}, before the
   * password is checked: attempts sent all at once cannot get past the limit while their checks run.
   * A success gives it back ({@link #loginSucceeded}); a failure keeps it taken.
   */
  Future<Verdict> loginAttempt(String username, String address) {
    return consume(bucket(failureKey(username, address), loginFailures));
  }

  /** A successful login forgets the failures of that username from that address. */
  Future<Void> loginSucceeded(String username, String address) {
    return Future.fromCompletionStage(bucket(failureKey(username, address), loginFailures).reset(), vertx.getOrCreateContext());
  }

  /** Counts one API request of the session. */
  Future<Verdict> apiRequest(String sessionKey) {
    return consume(bucket("api:" + sessionKey, api));
  }

  private Future<Verdict> consume(AsyncBucketProxy b) {
    return Future.fromCompletionStage(b.tryConsumeAndReturnRemaining(1), vertx.getOrCreateContext())
        .map(p -> p.isConsumed() ? Verdict.ALLOWED : refused(p.getNanosToWaitForRefill()));
  }

  private AsyncBucketProxy bucket(String key, BucketConfiguration config) {
    return buckets.builder().build(key, () -> java.util.concurrent.CompletableFuture.completedFuture(config));
  }

  private static String failureKey(String username, String address) {
    return "login-failures:" + username + "|" + address;
  }

  private static Verdict refused(long nanos) {
    return new Verdict(false, Math.max(1, (nanos + 999_999_999L) / 1_000_000_000L));
  }
}
