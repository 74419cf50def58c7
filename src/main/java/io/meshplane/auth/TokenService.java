package io.meshplane.auth;

import io.meshplane.access.Caller;
import io.meshplane.access.Denials;
import io.meshplane.access.Surface;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.common.Blocking;
import io.meshplane.common.Durations;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rules of API.md §5: no escalation (a new token's scope lies inside its creator's, and only
 * callers whose grants may mint a surface create, rotate or revoke tokens of it), revocation and
 * rotation that reach every replica, and an audit event in the same transaction as each change.
 * Revoking or rotating touches tokens only: never nodes. Takes validated values and the
 * {@link Caller}, not HTTP: the routes parse, this decides.
 */
public final class TokenService {
  private static final Logger LOG = LoggerFactory.getLogger(TokenService.class);
  /** Rotation retires the old token the same day at the latest (seed: "retired the same day"). */
  public static final Duration MAX_RETIRE = Duration.ofHours(24);

  /** A validated create request. */
  public record CreateRequest(String name, Scope scope, Instant expires) {}

  /** A validated rotate request. */
  public record RotateRequest(Instant expires, Duration retireOldIn) {}

  /** Completes with the new token and the old one's updated record. */
  public record Rotation(TokenIssuer.Issued issued, TokenRecord old) {}

  private final Pool pool;
  private final TokenRepository repository;
  private final TokenIssuer issuer;
  private final Denylist denylist;
  private final TokenUsage usage;
  private final AuditLog audit;
  private final Denials denials;
  private final Duration maxLifetime;

  public TokenService(Pool pool, TokenRepository repository, TokenIssuer issuer, Denylist denylist, TokenUsage usage,
      AuditLog audit, Duration maxLifetime) {
    this.pool = pool;
    this.repository = repository;
    this.issuer = issuer;
    this.denylist = denylist;
    this.usage = usage;
    this.audit = audit;
    this.denials = audit;
    this.maxLifetime = maxLifetime;
  }

  /** {@code tokens.max_lifetime}: the furthest ahead a token may expire. */
  public Duration maxLifetime() {
    return maxLifetime;
  }

  /** The refusal when {@code caller} may not mint (or rotate, or revoke) a token of {@code scope}; null when it may. */
  static Refusal grantRefusal(Caller caller, Scope scope) {
    Refusal agent = agentRefusal(scope);
    if (agent != null) return agent;
    if (!caller.boundary().contains(scope.boundary())) {
      return Refusal.forbidden("a new token's team and environment must lie inside yours ('*' is granted only by '*')");
    }
    if (!caller.mayMint(scope.surface())) {
      return Refusal.forbidden(scope.surface() == Surface.ADMIN ? "only an admin token can create an admin token"
          : "your grants do not allow " + scope.surface().wire + " tokens");
    }
    return null;
  }

  /** Agent tokens are made by enrollment only (API.md §8): nobody mints one, not even the command line. Null for any other surface. */
  static Refusal agentRefusal(Scope scope) {
    return scope.surface() == Surface.AGENT ? Refusal.forbidden("agent tokens are issued to nodes at enrollment only") : null;
  }

  /**
   * What is wrong with {@code expires} as a new token's expiry, or null: it must lie in the future and
   * at most {@code tokens.max_lifetime} ahead. Judged on whole seconds, as a JWT's {@code exp} is
   * issued, so "in the future" means a token that works.
   */
  static String expiryProblem(Instant expires, Duration maxLifetime) {
    Instant exp = expires.truncatedTo(ChronoUnit.SECONDS);
    Instant now = Instant.now();
    if (!exp.isAfter(now)) return "must be in the future";
    if (exp.isAfter(now.plus(maxLifetime))) return "must be at most " + Durations.format(maxLifetime) + " ahead (tokens.max_lifetime)";
    return null;
  }

  public Future<TokenIssuer.Issued> create(Caller caller, RequestInfo request, CreateRequest req) {
    Refusal refused = grantRefusal(caller, req.scope());
    if (refused != null) return denials.refuse(caller, request, "token.create", "token", null, refused, false);
    return pool.withTransaction(tx -> issuer.issue(tx, req.name(), req.scope(), null, req.expires(), caller.id())
        .compose(issued -> audit.success(tx, caller, request, "token.create", Target.of("token", issued.record().id(), req.name()),
            req.scope().team(), req.scope().environment()).map(issued)));
  }

  public Future<TokenRecord> get(Caller caller, String id) {
    return repository.find(pool, caller.boundary(), id, false).map(t -> {
      if (t == null || hidden(caller, t)) throw Refusal.notFound("no token " + id);
      return t;
    });
  }

  /**
   * API.md §17: an operator person manages the tokens of scripts, "tokens whose surface is not admin":
   * admin tokens are not theirs to read either (a 404, as for a token outside their scope). Whoever
   * may mint admin tokens sees them.
   */
  private static boolean seesAdminTokens(Caller caller) {
    return caller.mayMint(Surface.ADMIN);
  }

  /** An admin token, for a caller who may not see admin tokens: it does not exist for them (read, rotate, revoke). */
  private static boolean hidden(Caller caller, TokenRecord t) {
    return t.scope().surface() == Surface.ADMIN && !seesAdminTokens(caller);
  }

  public Future<io.vertx.core.buffer.Buffer> list(Caller caller, boolean includeRevoked, Page page) {
    return repository.list(caller.boundary(), includeRevoked, seesAdminTokens(caller), page)
        .compose(rows -> page.render(rows, t -> t.toJson(lastUse(t)), t -> List.of(t.id())));
  }

  /** The later of the stored last use and this replica's not-yet-flushed one. */
  public Instant lastUse(TokenRecord t) {
    Long pending = usage.pendingUse(t.id());
    if (pending == null) return t.lastUsedAt();
    Instant p = Instant.ofEpochMilli(pending);
    return t.lastUsedAt() == null || p.isAfter(t.lastUsedAt()) ? p : t.lastUsedAt();
  }

  public Future<Void> revoke(Caller caller, RequestInfo request, String id) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> repository.find(tx, caller.boundary(), id, true).compose(t -> {
      if (t == null || hidden(caller, t)) return Future.failedFuture(Refusal.notFound("no token " + id));
      if (!caller.mayMint(t.scope().surface())) {
        return Future.<TokenRecord>failedFuture(new Denied(Refusal.forbidden(t.scope().surface() == Surface.ADMIN
            ? "only an admin can revoke an admin token" : "your grants do not allow " + t.scope().surface().wire + " tokens")));
      }
      Future<Void> change = t.revokedAt() == null ? repository.revoke(tx, id, now) : Future.succeededFuture();
      return change.compose(v -> audit.success(tx, caller, request, "token.revoke", Target.of("token", id, t.name()), t.scope().team(),
          t.scope().environment())).map(t);
    })).recover(e -> refuseDenied(e, caller, request, "token.revoke", id))
        .compose(t -> denyAfterCommit(request, id, new Denylist.Entry(true, now.toEpochMilli()), t.expiresAt()));
  }

  /**
   * A refusal found inside a transaction: the transaction is rolled back first (this fails it), and the
   * denial is audited after, on a connection of its own, so that no request ever holds two.
   */
  private static final class Denied extends RuntimeException {
    final Refusal refusal;

    Denied(Refusal refusal) {
      super(refusal.getMessage(), null, false, false);
      this.refusal = refusal;
    }
  }

  private <T> Future<T> refuseDenied(Throwable e, Caller caller, RequestInfo request, String action, String id) {
    if (e instanceof Denied d) return denials.refuse(caller, request, action, "token", id, d.refusal, false);
    return Future.failedFuture(e);
  }

  /**
   * Puts a committed revocation or retirement on the cluster-wide denylist. The change is committed
   * whatever happens here, so a failure is logged, not answered: the answer (with a rotated token's
   * only copy of its JWT) still goes out, and the reconciliation puts the entry there within 30 s.
   */
  private Future<Void> denyAfterCommit(RequestInfo request, String id, Denylist.Entry entry, Instant expires) {
    return denylist.deny(id, entry, expires).recover(e -> {
      LOG.warn("[request: {}] token {}: committed, but not on the cluster's denylist yet ({}); the reconciliation retries within 30 s",
          request.requestId(), id, e.getMessage());
      return Future.succeededFuture();
    });
  }

  public Future<Rotation> rotate(Caller caller, RequestInfo request, String id, RotateRequest req) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> repository.find(tx, caller.boundary(), id, true).compose(old -> {
      if (old == null || hidden(caller, old)) return Future.failedFuture(Refusal.notFound("no token " + id));
      Refusal refused = grantRefusal(caller, old.scope());
      if (refused != null) return Future.<Rotation>failedFuture(new Denied(refused));
      if (old.revokedAt() != null) return Future.failedFuture(Refusal.conflict("token " + id + " is revoked"));
      if (old.rotatedTo() != null) return Future.failedFuture(Refusal.conflict("token " + id + " was already rotated to " + old.rotatedTo()));
      if (!old.activeAt(now)) return Future.failedFuture(Refusal.conflict("token " + id + " has expired"));
      Instant retireAt = now.plus(req.retireOldIn());
      if (retireAt.isAfter(old.expiresAt())) retireAt = old.expiresAt();
      Instant finalRetire = retireAt;
      return issuer.issue(tx, old.name(), old.scope(), null, req.expires(), caller.id())
          .compose(issued -> repository.retire(tx, id, finalRetire, issued.record().id())
              .compose(v -> audit.success(tx, caller, request, "token.rotate", Target.of("token", id, old.name()), old.scope().team(),
                  old.scope().environment()))
              .map(v -> new Rotation(issued, new TokenRecord(old.id(), old.name(), old.scope(), old.nodeId(), old.keyId(),
                  old.expiresAt(), old.createdAt(), old.createdBy(), null, finalRetire, issued.record().id(), old.lastUsedAt()))));
    })).recover(e -> this.<Rotation>refuseDenied(e, caller, request, "token.rotate", id))
        .compose(r -> denyAfterCommit(request, id, new Denylist.Entry(false, r.old().retireAt().toEpochMilli()), r.old().expiresAt()).map(r));
  }

  /**
   * Revoked and retired tokens from PostgreSQL into the replicated denylist, at start: the map does not
   * survive a restart of the whole cluster, and a member that just joined may not have received it
   * yet. Blocking (the start's own thread); returns how many.
   */
  public int loadDenylist() {
    List<TokenRecord> rows = Blocking.await(repository.deniedTokens(), Duration.ofMinutes(2), "loading the token denylist");
    for (TokenRecord t : rows) denylist.putNow(t.id(), denial(t), t.expiresAt());
    return rows.size();
  }

  private static Denylist.Entry denial(TokenRecord t) {
    return t.revokedAt() != null ? new Denylist.Entry(true, t.revokedAt().toEpochMilli())
        : new Denylist.Entry(false, t.retireAt().toEpochMilli());
  }

  /**
   * Re-applies recent revocations and retirements from PostgreSQL to the denylist. The denylist write
   * follows the database commit; should a replica die between the two, this closes the gap within one
   * period on every replica (the database is the source of truth).
   */
  public Future<Integer> reconcileDenylist() {
    return repository.recentlyDenied(15).compose(rows -> {
      List<Future<Void>> puts = new ArrayList<>();
      for (TokenRecord t : rows) {
        Denylist.Entry want = denial(t);
        Denylist.Entry have = denylist.lookup(t.id());
        // missing, or laxer than the database says (a retirement that landed after a revocation)
        if (have != null && have.atLeastAsStrictAs(want) && !denylist.laxerThan(t.id(), want)) continue;
        puts.add(denylist.deny(t.id(), want, t.expiresAt()));
      }
      return Future.all(puts).map(x -> puts.size());
    });
  }

  /**
   * Checks a token for {@code meshplane token create} by the API's own rules (no agent token; the
   * expiry's bounds), before anything is opened: a {@link Refusal} naming {@code --expires} or the
   * surface otherwise.
   */
  public static void checkFromCli(Scope scope, Instant expires, Duration maxLifetime) {
    Refusal agent = agentRefusal(scope);
    if (agent != null) throw agent;
    String problem = expiryProblem(expires, maxLifetime);
    if (problem != null) throw Refusal.invalid("--expires", problem);
  }

  /**
   * {@code meshplane token create} (how the first admin token is made): checks the token as
   * {@link #checkFromCli} does, issues it with the replica's issuer and signing keys (read from, or
   * created in, {@code keysDir}), and records {@code token.create} by the operating-system user
   * {@code osUser}, in one transaction. Blocking (the command line's thread); returns the JWT.
   */
  public static String createFromCli(Vertx vertx, Pool pool, AuditLog audit, Path keysDir, AuthModule.Settings settings, String name,
      Scope scope, Instant expires, String osUser) {
    checkFromCli(scope, expires, settings.maxLifetime());
    SigningKeys keys = SigningKeys.loadOrCreate(keysDir);
    TokenIssuer issuer = new TokenIssuer(new Jwts(vertx, keys, settings.issuer()), new TokenRepository(pool), keys);
    TokenIssuer.Issued issued = Blocking.await(pool.withTransaction(tx ->
        issuer.issue(tx, name, scope, null, expires, "cli").compose(i -> audit.record(tx, AuditEvent.of(Actor.cli(osUser),
            RequestInfo.NONE, "token.create", "token", i.record().id(), AuditEvent.SUCCESS, scope.team(), scope.environment()).named(name))
            .map(i))), Duration.ofSeconds(30), "creating the token");
    return issued.jwt();
  }
}
