package io.meshplane.auth;

import io.meshplane.access.Boundary;
import io.meshplane.access.Surface;
import io.meshplane.common.Page;
import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;

/** The SQL of tokens. Every read is filtered by the caller's scope: what is outside does not exist. */
final class TokenRepository {
  private static final String COLUMNS = "id, name, team, environment, surface, node_id, key_id, expires_at, created_at, "
      + "created_by, revoked_at, retire_at, rotated_to, last_used_at";
  /** $1 team, $2 environment of the caller ('*' = all). */
  private static final String IN_SCOPE = Sql.inScope(1, 2);

  private final Pool pool;

  private final Pool reads;

  public TokenRepository(Pool pool) {
    this(pool, pool);
  }

  /** @param reads the read pool (its own connections, postgres.read_timeout per statement) for the token list */
  public TokenRepository(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  public Future<Void> insert(SqlClient client, TokenRecord t) {
    return client.preparedQuery("INSERT INTO tokens (" + COLUMNS + ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)")
        .execute(Tuple.from(new Object[] {t.id(), t.name(), t.scope().team(), t.scope().environment(), t.scope().surface().wire,
            t.nodeId(), t.keyId(), Sql.odt(t.expiresAt()), Sql.odt(t.createdAt()), t.createdBy(), Sql.odt(t.revokedAt()), Sql.odt(t.retireAt()),
            t.rotatedTo(), Sql.odt(t.lastUsedAt())}))
        .mapEmpty();
  }

  /** One non-agent token inside the scope, or null. {@code forUpdate} locks it for the transaction. */
  public Future<TokenRecord> find(SqlClient client, Boundary caller, String id, boolean forUpdate) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM tokens WHERE " + IN_SCOPE + " AND id = $3 AND surface <> 'agent'"
            + (forUpdate ? " FOR UPDATE" : ""))
        .execute(Tuple.of(caller.team(), caller.environment(), id))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  public Future<List<TokenRecord>> list(Boundary caller, boolean includeRevoked, boolean includeAdmin, Page page) {
    String sql = "SELECT " + COLUMNS + " FROM tokens WHERE " + IN_SCOPE + " AND surface <> 'agent'"
        + (includeAdmin ? "" : " AND surface <> 'admin'")
        + (includeRevoked ? "" : " AND revoked_at IS NULL")
        + " AND ($3::text IS NULL OR id > $3) ORDER BY id LIMIT $4";
    return reads.preparedQuery(sql).execute(Tuple.of(caller.team(), caller.environment(), page.afterPart(0), page.fetch()))
        .map(rows -> Sql.list(rows, TokenRepository::map));
  }

  public Future<Void> revoke(SqlClient client, String id, Instant at) {
    return client.preparedQuery("UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .execute(Tuple.of(id, Sql.odt(at))).mapEmpty();
  }

  public Future<Void> retire(SqlClient client, String id, Instant retireAt, String rotatedTo) {
    return client.preparedQuery("UPDATE tokens SET retire_at = $2, rotated_to = $3 WHERE id = $1")
        .execute(Tuple.of(id, Sql.odt(retireAt), rotatedTo)).mapEmpty();
  }

  /** The tokens that must be refused before their expiry (revoked or retired), for the start-up denylist load. */
  public Future<List<TokenRecord>> deniedTokens() {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM tokens WHERE (revoked_at IS NOT NULL OR retire_at IS NOT NULL) AND expires_at > now()")
        .execute()
        .map(rows -> Sql.list(rows, TokenRepository::map));
  }

  /** Revokes every agent token of a node (deprovisioning); completes with those revoked now. */
  public Future<List<TokenRecord>> revokeForNode(SqlClient tx, String nodeId, Instant at) {
    return tx.preparedQuery("UPDATE tokens SET revoked_at = $2 WHERE node_id = $1 AND revoked_at IS NULL RETURNING " + COLUMNS)
        .execute(Tuple.of(nodeId, Sql.odt(at)))
        .map(rows -> Sql.list(rows, TokenRepository::map));
  }

  /** Tokens denied (revoked or retired) in the last {@code minutes}: the periodic denylist reconciliation. */
  public Future<List<TokenRecord>> recentlyDenied(int minutes) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM tokens WHERE expires_at > now() AND "
            + "(revoked_at > now() - make_interval(mins => $1) OR retire_at > now() - make_interval(mins => $1))")
        .execute(Tuple.of(minutes))
        .map(rows -> Sql.list(rows, TokenRepository::map));
  }



  private static TokenRecord map(Row r) {
    return new TokenRecord(r.getString("id"), r.getString("name"),
        new Scope(r.getString("team"), r.getString("environment"), Surface.parse(r.getString("surface"))),
        r.getString("node_id"), r.getString("key_id"), Sql.instant(r, "expires_at"), Sql.instant(r, "created_at"),
        r.getString("created_by"), Sql.instant(r, "revoked_at"), Sql.instant(r, "retire_at"), r.getString("rotated_to"),
        Sql.instant(r, "last_used_at"));
  }
}
