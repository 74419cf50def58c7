package io.meshplane.auth;

import io.meshplane.common.Durations;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Refusal;
import io.meshplane.common.Fields;
import io.meshplane.http.Page;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The rules of SPEC §3: validation, no escalation (a new token's scope lies inside its creator's, and
 * only admins mint admins), revocation and rotation that reach every replica, and an audit event in the
 * same transaction as each change. Revoking or rotating touches tokens only: never nodes.
 */
public final class TokenService {
  /** Rotation retires the old token the same day at the latest (seed: "retired the same day"). */
  public static final Duration MAX_RETIRE = Duration.ofHours(24);

  private final Pool pool;
  private final TokenRepository repository;
  private final TokenIssuer issuer;
  private final Denylist denylist;
  private final TokenUsage usage;
  private final AuditLog audit;
  private final Duration maxLifetime;

  public TokenService(Pool pool, TokenRepository repository, TokenIssuer issuer, Denylist denylist, TokenUsage usage,
      AuditLog audit, Duration maxLifetime) {
    this.pool = pool;
    this.repository = repository;
    this.issuer = issuer;
    this.denylist = denylist;
    this.usage = usage;
    this.audit = audit;
    this.maxLifetime = maxLifetime;
  }

  /** A validated create request. */
  public record CreateRequest(String name, Scope scope, Instant expires) {}

  public CreateRequest parseCreate(JsonObject body) {
    Fields f = new Fields();
    String name = f.label(body, "name", "name", 64);
    Scope scope = null;
    JsonObject s = f.object(body, "scope", "scope");
    if (s != null) {
      String team = f.slugOrStar(s, "team", "scope.team");
      String env = f.slugOrStar(s, "environment", "scope.environment");
      String surfaceName = f.string(s, "surface", "scope.surface");
      Surface surface = surfaceName == null ? null : Surface.parse(surfaceName);
      if (surfaceName != null && surface == null) {
        f.error("scope.surface", "must be one of " + Arrays.stream(Surface.values()).map(x -> x.wire).collect(Collectors.joining(", ")));
      }
      if (team != null && env != null && surface != null) scope = new Scope(team, env, surface);
    }
    Instant expires = expiry(f, body, "expires");
    f.check();
    return new CreateRequest(name, scope, expires);
  }

  private Instant expiry(Fields f, JsonObject body, String key) {
    Instant expires = f.timestamp(body, key, key);
    if (expires == null) return null;
    Instant now = Instant.now();
    if (!expires.isAfter(now)) {
      f.error(key, "must be in the future");
      return null;
    }
    if (expires.isAfter(now.plus(maxLifetime))) {
      f.error(key, "must be at most " + Durations.format(maxLifetime) + " ahead (tokens.max_lifetime)");
      return null;
    }
    return expires;
  }

  /** 403 unless {@code caller} may mint a token of {@code scope}. */
  public static void checkGrant(Principal caller, Scope scope) {
    if (scope.surface() == Surface.AGENT) throw Refusal.forbidden("agent tokens are issued to nodes at enrollment only");
    if (!caller.scope().contains(scope)) {
      throw Refusal.forbidden("a new token's team and environment must lie inside yours ('*' is granted only by '*')");
    }
    if (scope.surface() == Surface.ADMIN && caller.scope().surface() != Surface.ADMIN) {
      throw Refusal.forbidden("only an admin token can create an admin token");
    }
  }

  public Future<TokenIssuer.Issued> create(RoutingContext ctx, Principal caller, JsonObject body) {
    CreateRequest req = parseCreate(body);
    try {
      checkGrant(caller, req.scope());
    } catch (Refusal denied) {
      return audit.denied(AuditLog.event(ctx, caller, "token.create", "token", null, AuditEvent.DENIED,
          caller.scope().team(), caller.scope().environment())).compose(v -> Future.failedFuture(denied));
    }
    return pool.withTransaction(tx -> issuer.issue(tx, req.name(), req.scope(), null, req.expires(), caller.tokenId())
        .compose(issued -> audit.record(tx, AuditLog.event(ctx, caller, "token.create", "token", issued.record().id(),
            AuditEvent.SUCCESS, req.scope().team(), req.scope().environment())).map(issued)));
  }

  public Future<TokenRecord> get(Principal caller, String id) {
    return repository.find(pool, caller.scope(), id, false).map(t -> {
      if (t == null) throw Refusal.notFound("no token " + id);
      return t;
    });
  }

  public Future<JsonObject> list(Principal caller, boolean includeRevoked, Page page) {
    return repository.list(caller.scope(), includeRevoked, page)
        .map(rows -> page.respond(rows, t -> t.toJson(lastUse(t)), t -> List.of(t.id())));
  }

  /** The later of the stored last use and this replica's not-yet-flushed one. */
  public Instant lastUse(TokenRecord t) {
    Long pending = usage.pendingUse(t.id());
    if (pending == null) return t.lastUsedAt();
    Instant p = Instant.ofEpochMilli(pending);
    return t.lastUsedAt() == null || p.isAfter(t.lastUsedAt()) ? p : t.lastUsedAt();
  }

  public Future<Void> revoke(RoutingContext ctx, Principal caller, String id) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> repository.find(tx, caller.scope(), id, true).compose(t -> {
      if (t == null) return Future.failedFuture(Refusal.notFound("no token " + id));
      if (t.scope().surface() == Surface.ADMIN && caller.scope().surface() != Surface.ADMIN) {
        Refusal denied = Refusal.forbidden("only an admin can revoke an admin token");
        return audit.denied(AuditLog.event(ctx, caller, "token.revoke", "token", id, AuditEvent.DENIED,
            caller.scope().team(), caller.scope().environment())).compose(v -> Future.failedFuture(denied));
      }
      Future<Void> change = t.revokedAt() == null ? repository.revoke(tx, id, now) : Future.succeededFuture();
      return change.compose(v -> audit.record(tx, AuditLog.event(ctx, caller, "token.revoke", "token", id, AuditEvent.SUCCESS,
          t.scope().team(), t.scope().environment()))).map(t);
    })).compose(t -> denylist.deny(id, new Denylist.Entry(true, now.toEpochMilli()), t.expiresAt()));
  }

  /** A validated rotate request. */
  public record RotateRequest(Instant expires, Duration retireOldIn) {}

  public RotateRequest parseRotate(JsonObject body) {
    Fields f = new Fields();
    Instant expires = expiry(f, body, "expires");
    Duration retire = MAX_RETIRE;
    String raw = f.optionalString(body, "retire_old_in", "retire_old_in");
    if (raw != null) {
      try {
        retire = Durations.parse(raw);
        if (retire.compareTo(MAX_RETIRE) > 0) {
          f.error("retire_old_in", "must be at most 24h (the old token is retired the same day)");
        }
      } catch (IllegalArgumentException e) {
        f.error("retire_old_in", "must be a duration such as 30m or 2h");
      }
    }
    f.check();
    return new RotateRequest(expires, retire);
  }

  /** Completes with the new token and the old one's updated record. */
  public record Rotation(TokenIssuer.Issued issued, TokenRecord old) {}

  public Future<Rotation> rotate(RoutingContext ctx, Principal caller, String id, JsonObject body) {
    RotateRequest req = parseRotate(body);
    Instant now = Times.now();
    return pool.withTransaction(tx -> repository.find(tx, caller.scope(), id, true).compose(old -> {
      if (old == null) return Future.failedFuture(Refusal.notFound("no token " + id));
      try {
        checkGrant(caller, old.scope());
      } catch (Refusal denied) {
        return audit.denied(AuditLog.event(ctx, caller, "token.rotate", "token", id, AuditEvent.DENIED,
            caller.scope().team(), caller.scope().environment())).compose(v -> Future.failedFuture(denied));
      }
      if (old.revokedAt() != null) return Future.failedFuture(Refusal.conflict("token " + id + " is revoked"));
      if (old.rotatedTo() != null) return Future.failedFuture(Refusal.conflict("token " + id + " was already rotated to " + old.rotatedTo()));
      if (!old.activeAt(now)) return Future.failedFuture(Refusal.conflict("token " + id + " has expired"));
      Instant retireAt = now.plus(req.retireOldIn());
      if (retireAt.isAfter(old.expiresAt())) retireAt = old.expiresAt();
      Instant finalRetire = retireAt;
      return issuer.issue(tx, old.name(), old.scope(), null, req.expires(), caller.tokenId())
          .compose(issued -> repository.retire(tx, id, finalRetire, issued.record().id())
              .compose(v -> audit.record(tx, AuditLog.event(ctx, caller, "token.rotate", "token", id, AuditEvent.SUCCESS,
                  old.scope().team(), old.scope().environment())))
              .map(v -> new Rotation(issued, new TokenRecord(old.id(), old.name(), old.scope(), old.nodeId(), old.keyId(),
                  old.expiresAt(), old.createdAt(), old.createdBy(), null, finalRetire, issued.record().id(), old.lastUsedAt()))));
    })).compose(r -> denylist.deny(id, new Denylist.Entry(false, r.old().retireAt().toEpochMilli()), r.old().expiresAt()).map(r));
  }

  /**
   * Re-applies recent revocations and retirements from PostgreSQL to the denylist. The denylist write
   * follows the database commit; should a replica die between the two, this closes the gap within one
   * period on every replica (the database is the source of truth).
   */
  public Future<Integer> reconcileDenylist() {
    return repository.recentlyDenied(15).compose(rows -> {
      List<Future<Void>> puts = new java.util.ArrayList<>();
      for (TokenRecord t : rows) {
        if (denylist.lookup(t.id()) != null) continue;
        Denylist.Entry e = t.revokedAt() != null ? new Denylist.Entry(true, t.revokedAt().toEpochMilli())
            : new Denylist.Entry(false, t.retireAt().toEpochMilli());
        puts.add(denylist.deny(t.id(), e, t.expiresAt()));
      }
      return Future.all(puts).map(x -> puts.size());
    });
  }
}
