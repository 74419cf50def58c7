package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.access.Role;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;

/** The {@code users} table: the panel's people. */
final class UserRepository {
  private static final String COLUMNS =
      "id, username, password_hash, role, team, environment, disabled, created_at, updated_at, last_login_at, created_by, source, oidc_issuer, "
          + "oidc_subject";

  private final Pool pool;

  UserRepository(Pool pool) {
    this.pool = pool;
  }

  /**
   * The answer to a taken username: usernames are unique across every team (they are the login name),
   * so the answer must not tell a team's admin whether, or in which team, the user exists.
   */
  static final String TAKEN = "this username is not available; choose another";

  /** Inserts the user; a taken username is a 409 {@code conflict} with {@link #TAKEN}, the same text wherever its user is. */
  Future<Void> insert(SqlClient client, UserRecord u) {
    return client.preparedQuery("INSERT INTO users (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)")
        .execute(Tuple.from(new Object[] {u.id(), u.username(), u.passwordHash(), u.role().wire, u.team(), u.environment(), u.disabled(),
            Sql.odt(u.createdAt()), Sql.odt(u.updatedAt()), Sql.odt(u.lastLoginAt()), u.createdBy(), u.source(), u.oidcIssuer(),
            u.oidcSubject()}))
        .<Void>mapEmpty()
        .recover(t -> t instanceof PgException pg && "23505".equals(pg.getSqlState())
            ? Future.failedFuture(Refusal.conflict(TAKEN))
            : Future.failedFuture(t));
  }

  /** The user of this name, wherever it lies (the login), or null. */
  Future<UserRecord> byUsername(String username) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM users WHERE username = $1").execute(Tuple.of(username))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** The IdP user of this issuer and subject, wherever it lies (single sign-on), or null; locked for update in a transaction. */
  Future<UserRecord> byOidcSubject(SqlClient client, String issuer, String subject) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM users WHERE source = 'oidc' AND oidc_issuer = $1 AND oidc_subject = $2 FOR UPDATE")
        .execute(Tuple.of(issuer, subject))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** Whether a user (any source) has this name. */
  Future<Boolean> nameTaken(SqlClient client, String username) {
    return client.preparedQuery("SELECT 1 FROM users WHERE username = $1").execute(Tuple.of(username)).map(rows -> rows.size() > 0);
  }

  /** What the IdP's mapping says at a login: role, team and environment, and the login's time. */
  Future<Void> mapped(SqlClient client, UserRecord u) {
    return client.preparedQuery("UPDATE users SET role = $2, team = $3, environment = $4, updated_at = $5, last_login_at = $6 WHERE id = $1")
        .execute(Tuple.of(u.id(), u.role().wire, u.team(), u.environment(), Sql.odt(u.updatedAt()), Sql.odt(u.lastLoginAt())))
        .mapEmpty();
  }

  /** The user inside the caller's boundary, or null (outside is the same as missing). */
  Future<UserRecord> find(SqlClient client, Boundary caller, String id, boolean forUpdate) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM users WHERE " + Sql.inScope(1, 2) + " AND id = $3"
            + (forUpdate ? " FOR UPDATE" : ""))
        .execute(Tuple.of(caller.team(), caller.environment(), id))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  Future<List<UserRecord>> list(Boundary caller, Page page) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM users WHERE " + Sql.inScope(1, 2)
            + " AND ($3::text IS NULL OR id > $3) ORDER BY id LIMIT $4")
        .execute(Tuple.of(caller.team(), caller.environment(), page.afterPart(0), page.fetch()))
        .map(rows -> Sql.list(rows, UserRepository::map));
  }

  Future<Void> update(SqlClient client, UserRecord u) {
    return client.preparedQuery("UPDATE users SET role = $2, disabled = $3, password_hash = $4, updated_at = $5 WHERE id = $1")
        .execute(Tuple.of(u.id(), u.role().wire, u.disabled(), u.passwordHash(), Sql.odt(u.updatedAt())))
        .mapEmpty();
  }

  /** Sets the login time when the user is enabled and unchanged since {@code readUpdatedAt}; false otherwise. */
  Future<Boolean> loggedIn(SqlClient client, String id, Instant readUpdatedAt, Instant at) {
    return client.preparedQuery("UPDATE users SET last_login_at = $3 WHERE id = $1 AND updated_at = $2 AND NOT disabled")
        .execute(Tuple.of(id, Sql.odt(readUpdatedAt), Sql.odt(at))).map(rows -> rows.rowCount() == 1);
  }

  private static UserRecord map(Row r) {
    return new UserRecord(r.getString("id"), r.getString("username"), r.getString("password_hash"), Role.parse(r.getString("role")),
        r.getString("team"), r.getString("environment"), r.getBoolean("disabled"), Sql.instant(r, "created_at"),
        Sql.instant(r, "updated_at"), Sql.instant(r, "last_login_at"), r.getString("created_by"), r.getString("source"),
        r.getString("oidc_issuer"), r.getString("oidc_subject"));
  }
}
