package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import java.time.Instant;

/**
 * The panel users that single sign-on brings (API.md §17, "Single sign-on"). An IdP user is found
 * again at every login by its issuer and subject, never by its name: a person at the IdP who picks
 * the name of a local admin does not become that admin. The first login creates the user
 * ({@code source: oidc}, no password), named after {@code preferred_username} when that is a valid
 * username nobody has, else {@code oidc-<sub>}; every login applies the mapping again (role, team,
 * environment: the IdP is the source of truth), and a change ends the user's other sessions. A user
 * an admin disabled in the panel stays refused whatever the IdP says (a local lock-out).
 */
final class OidcUsers {
  private final Pool pool;
  private final UserRepository users;
  private final Sessions sessions;
  private final AuditLog audit;

  OidcUsers(Pool pool, UserRepository users, Sessions sessions, AuditLog audit) {
    this.pool = pool;
    this.users = users;
    this.sessions = sessions;
    this.audit = audit;
  }

  /**
   * The user of these claims as the mapping makes it, created or updated (the change audited as
   * {@code user.create} / {@code user.update} by the IdP), or null when the user is disabled. Two
   * first logins of one subject at once (two tabs, two replicas) both read "no such user"; the
   * second insert then breaks a unique index (SQLSTATE 23505: the subject, or the name another
   * person just took) and is tried once more, finding the user the first one made.
   */
  Future<UserRecord> upsert(String issuer, JsonObject claims, OidcMapping m, RequestInfo request) {
    return attempt(issuer, claims, m, request).recover(t -> unique(t) ? attempt(issuer, claims, m, request) : Future.failedFuture(t));
  }

  /** A unique violation: PostgreSQL's own, or as {@link UserRepository#insert} answers it (a 409 conflict). */
  static boolean unique(Throwable t) {
    return t instanceof PgException pg && "23505".equals(pg.getSqlState()) || t instanceof Refusal r && r.kind() == Refusal.Kind.CONFLICT;
  }

  private Future<UserRecord> attempt(String issuer, JsonObject claims, OidcMapping m, RequestInfo request) {
    String sub = claims.getString("sub");
    Instant now = Times.now();
    Actor idp = new Actor("system", "oidc", "single sign-on");
    return pool.withTransaction(tx -> users.byOidcSubject(tx, issuer, sub).compose(found -> {
      if (found != null && found.disabled()) return Future.succeededFuture(new UserRecord[] {null, null});
      if (found != null) {
        if (found.role() == m.role() && found.team().equals(m.team()) && found.environment().equals(m.environment())) {
          return Future.succeededFuture(new UserRecord[] {found, null});
        }
        UserRecord next = new UserRecord(found.id(), found.username(), found.passwordHash(), m.role(), m.team(), m.environment(), false,
            found.createdAt(), now, found.lastLoginAt(), found.createdBy(), UserRecord.OIDC, issuer, sub);
        return users.mapped(tx, next)
            .compose(v -> audit.record(tx, AuditEvent.of(idp, request, "user.update", "user", next.id(), AuditEvent.SUCCESS, next.team(),
                next.environment()).with(new JsonObject().put("role", next.role().wire).put("source", UserRecord.OIDC))))
            .map(v -> new UserRecord[] {next, found});
      }
      String preferred = claims.getValue("preferred_username") instanceof String p ? UserRoutes.canonical(p) : null;
      Future<String> name = preferred == null ? Future.succeededFuture(fallbackName(sub))
          : users.nameTaken(tx, preferred).map(taken -> taken ? fallbackName(sub) : preferred);
      return name.compose(username -> {
        UserRecord u = new UserRecord(Ids.next("usr"), username, UserRecord.NO_PASSWORD, m.role(), m.team(), m.environment(), false, now, now,
            null, "oidc", UserRecord.OIDC, issuer, sub);
        return users.insert(tx, u)
            .compose(v -> audit.record(tx, AuditEvent.of(idp, request, "user.create", "user", u.id(), AuditEvent.SUCCESS, u.team(),
                u.environment()).with(new JsonObject().put("role", u.role().wire).put("source", UserRecord.OIDC))))
            .map(v -> new UserRecord[] {u, null});
      });
    })).compose(pair -> pair[1] == null ? Future.succeededFuture(pair[0])
        // the IdP changed what the person may do: their other sessions end, as for any change of a user
        : sessions.endAllOf(pair[0].id()).map(pair[0]));
  }

  /**
   * Records the login when the user is still as read (enabled, unchanged since): false when a change
   * committed meanwhile, and nothing is recorded. The audit row names the subject, never a token.
   */
  Future<Boolean> loggedIn(UserRecord u, JsonObject claims, RequestInfo request) {
    return pool.withTransaction(tx -> users.loggedIn(tx, u.id(), u.updatedAt(), Times.now()).compose(current -> !current
        ? Future.succeededFuture(false)
        : audit.record(tx, AuditEvent.of(new Actor("user", u.id(), u.username()), request, "session.oidc_login", "user", u.id(),
            AuditEvent.SUCCESS, u.team(), u.environment()).with(identity(u.oidcIssuer(), claims))).map(true)));
  }

  /**
   * Records a refused login ({@code session.oidc_login}, outcome denied): with the subject when the
   * ID token was verified (claims not null), never a token or a code. A user known here is placed
   * in their team and environment; anyone else under {@code *}.
   */
  Future<Void> refused(String issuer, JsonObject claims, String reason, RequestInfo request) {
    String sub = claims == null ? null : claims.getString("sub");
    Future<UserRecord> known = sub == null ? Future.succeededFuture(null)
        : pool.withTransaction(tx -> users.byOidcSubject(tx, issuer, sub));
    return known.compose(u -> {
      String name = u != null ? u.username() : claims == null ? "unknown" : displayName(claims);
      Actor actor = new Actor("user", u == null ? "unknown" : u.id(), name);
      JsonObject details = (claims == null ? new JsonObject() : identity(issuer, claims)).put("reason", reason);
      return audit.record(pool, AuditEvent.of(actor, request, "session.oidc_login", u == null ? null : "user", u == null ? null : u.id(),
          AuditEvent.DENIED, u == null ? Boundary.ALL : u.team(), u == null ? Boundary.ALL : u.environment()).with(details));
    });
  }

  private static JsonObject identity(String issuer, JsonObject claims) {
    JsonObject j = new JsonObject().put("issuer", issuer).put("subject", claims.getString("sub"));
    if (claims.getValue("preferred_username") instanceof String p) j.put("preferred_username", clip(p));
    return j;
  }

  private static String displayName(JsonObject claims) {
    return claims.getValue("preferred_username") instanceof String p ? clip(p) : fallbackName(claims.getString("sub"));
  }

  /**
   * {@code oidc-<sub>} when that is a valid username (a Keycloak or Okta subject is), else
   * {@code oidc-} and 32 hex digits of the subject's SHA-256: a username is at most 64 of
   * {@code a-z 0-9 . _ @ -}, and a subject may be anything up to 255 characters.
   */
  static String fallbackName(String sub) {
    String plain = "oidc-" + sub;
    if (UserRoutes.USERNAME.matcher(plain).matches()) return plain;
    try {
      byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(sub.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return "oidc-" + java.util.HexFormat.of().formatHex(d, 0, 16);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String clip(String s) {
    return s.length() > 200 ? s.substring(0, 200) : s;
  }
}
