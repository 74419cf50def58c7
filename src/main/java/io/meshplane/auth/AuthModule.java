package io.meshplane.auth;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.access.Authenticator;
import io.meshplane.audit.AuditLog;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Scoped tokens as a module (API.md §5): the bearer-token way in ({@link #authenticator()}), the token
 * endpoints, agent credentials for the node feature ({@link #agentCredentials()}), the cluster-wide
 * denylist (loaded at start, reconciled every 30 s) and the coalesced last-use writes (every 5 s).
 */
public final class AuthModule implements Module {
  private static final Logger LOG = LoggerFactory.getLogger(AuthModule.class);
  private static final Duration USAGE_FLUSH = Duration.ofSeconds(5);
  private static final Duration DENYLIST_RECONCILE = Duration.ofSeconds(30);

  /** This module's slice of the settings. */
  public record Settings(String issuer, Duration maxLifetime) {}

  private final Denylist denylist;
  private final Vertx vertx;
  private final TokenIssuer issuer;
  private final TokenUsage usage;
  private final TokenVerifier verifier;
  private final TokenService tokens;
  private final AgentCredentials agentCredentials;
  private final Cursors cursors;
  private long usageTimer = -1;
  private long reconcileTimer = -1;

  public AuthModule(Vertx vertx, HazelcastInstance hz, Pool pool, Pool reads, SigningKeys keys, AuditLog audit, MeshMetrics metrics, Cursors cursors,
      Settings settings) {
    this.vertx = vertx;
    this.cursors = cursors;
    Jwts jwts = new Jwts(vertx, keys, settings.issuer());
    TokenRepository repository = new TokenRepository(pool, reads);
    Denylist denylist = new Denylist(vertx, hz);
    this.denylist = denylist;
    this.usage = new TokenUsage(pool);
    this.verifier = new TokenVerifier(jwts, denylist, usage, metrics);
    this.issuer = new TokenIssuer(jwts, repository, keys);
    this.tokens = new TokenService(pool, repository, issuer, denylist, usage, audit, settings.maxLifetime());
    this.agentCredentials = new TokenAgentCredentials(issuer, repository, denylist, settings.maxLifetime());
  }

  @Override
  public String name() {
    return "tokens";
  }

  @Override
  public void load() {
    LOG.info("token denylist: {} revoked or retired tokens loaded from PostgreSQL", tokens.loadDenylist());
  }

  @Override
  public Future<Void> start() {
    usageTimer = vertx.setPeriodic(USAGE_FLUSH.toMillis(), id -> usage.flush());
    reconcileTimer = vertx.setPeriodic(DENYLIST_RECONCILE.toMillis(), id -> tokens.reconcileDenylist().onSuccess(n -> {
      if (n > 0) LOG.warn("token denylist: {} revocations were missing from the cluster map and were re-applied", n);
    }));
    return Future.succeededFuture();
  }

  @Override
  public void routes(Api api) {
    TokenRoutes.mount(api, tokens, verifier, cursors);
  }

  /** Last-use times collected in memory go to PostgreSQL before the replica closes. */
  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(usageTimer);
    vertx.cancelTimer(reconcileTimer);
    return usage.flush();
  }

  /** Last-use times are a convenience: the shutdown does not wait long for them. */
  @Override
  public Duration stopTimeout() {
    return Duration.ofSeconds(3);
  }

  /** The way in for bearer tokens. */
  /**
   * Tells {@code listener} of every token denial this replica hears of, from any replica (revocations,
   * rotations, deletions): the token id and when it stops working ({@code Long.MIN_VALUE}: at once).
   * Called on a cluster event thread: keep it short.
   */
  public void onDenied(java.util.function.ObjLongConsumer<String> listener) {
    denylist.onDenied(listener);
  }

  public Authenticator authenticator() {
    return verifier;
  }

  public TokenVerifier verifier() {
    return verifier;
  }

  public TokenUsage usage() {
    return usage;
  }

  public TokenIssuer issuer() {
    return issuer;
  }

  public TokenService tokens() {
    return tokens;
  }

  public AgentCredentials agentCredentials() {
    return agentCredentials;
  }
}
