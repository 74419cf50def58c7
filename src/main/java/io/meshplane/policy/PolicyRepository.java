package io.meshplane.policy;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;

/** The SQL of ACL policies ({@code acl_policies}, V6): every version of every team+environment's policy. */
final class PolicyRepository {
  /** One stored version. {@code restoredFrom} is the version a rollback copied, or null. */
  record Stored(String team, String environment, long version, JsonObject policy, Instant createdAt, String actorType, String actorId,
      String actorName, Long restoredFrom) {}

  private static final String COLUMNS = "team, environment, version, policy, created_at, actor_type, actor_id, actor_name, restored_from";

  private final Pool pool;

  PolicyRepository(Pool pool) {
    this.pool = pool;
  }

  /** The current version of one policy, or null (version 0: the empty policy). */
  Future<Stored> current(SqlClient client, String team, String env) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM acl_policies WHERE team = $1 AND environment = $2 ORDER BY version DESC LIMIT 1")
        .execute(Tuple.of(team, env))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  Future<Stored> current(String team, String env) {
    return current(pool, team, env);
  }

  Future<Stored> version(String team, String env, long version) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM acl_policies WHERE team = $1 AND environment = $2 AND version = $3")
        .execute(Tuple.of(team, env, version))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** Versions in ascending order after {@code afterVersion}, at most {@code limit}. */
  Future<List<Stored>> versions(String team, String env, Long afterVersion, int limit) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM acl_policies WHERE team = $1 AND environment = $2"
            + " AND ($3::int8 IS NULL OR version > $3) ORDER BY version LIMIT $4")
        .execute(Tuple.of(team, env, afterVersion, limit))
        .map(rows -> Sql.list(rows, PolicyRepository::map));
  }

  Future<Void> insert(SqlClient tx, Stored s) {
    return tx.preparedQuery("INSERT INTO acl_policies (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
        .execute(Tuple.from(new Object[] {s.team(), s.environment(), s.version(), s.policy(), Sql.odt(s.createdAt()), s.actorType(),
            s.actorId(), s.actorName(), s.restoredFrom()}))
        .mapEmpty();
  }

  /** Every team+environment's current policy, in the caller's snapshot (the peer model's load). */
  static Future<List<Stored>> allCurrent(SqlClient client) {
    return client.query("SELECT DISTINCT ON (team, environment) " + COLUMNS + " FROM acl_policies ORDER BY team, environment, version DESC")
        .execute()
        .map(rows -> Sql.list(rows, PolicyRepository::map));
  }

  private static Stored map(Row r) {
    return new Stored(r.getString("team"), r.getString("environment"), r.getLong("version"), (JsonObject) r.getJson("policy"),
        Sql.instant(r, "created_at"), r.getString("actor_type"), r.getString("actor_id"), r.getString("actor_name"),
        r.getLong("restored_from"));
  }
}
