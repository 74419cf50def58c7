package io.meshplane.wafpolicy;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;

/** The {@code waf_policies} table (V24): every version of each team+environment's traffic policy. */
final class WafPolicyRepository {
  record Stored(String team, String environment, long version, String document, String mode, Instant createdAt, String actorType,
      String actorId, String actorName, Long restoredFrom) {}

  private static final String COLUMNS = "team, environment, version, document, mode, created_at, actor_type, actor_id, actor_name, restored_from";
  private final Pool pool;

  WafPolicyRepository(Pool pool) {
    this.pool = pool;
  }

  Pool pool() {
    return pool;
  }

  Future<Stored> current(SqlClient client, String team, String env) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM waf_policies WHERE team = $1 AND environment = $2 ORDER BY version DESC LIMIT 1")
        .execute(Tuple.of(team, env)).map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  Future<Stored> current(String team, String env) {
    return current(pool, team, env);
  }

  Future<Stored> version(String team, String env, long version) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM waf_policies WHERE team = $1 AND environment = $2 AND version = $3")
        .execute(Tuple.of(team, env, version)).map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** Oldest first, as the ACL policy's: the versions after {@code afterVersion} (null: from the first). */
  Future<List<Stored>> versions(String team, String env, Long afterVersion, int limit) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM waf_policies WHERE team = $1 AND environment = $2"
            + " AND ($3::int8 IS NULL OR version > $3) ORDER BY version LIMIT $4")
        .execute(Tuple.of(team, env, afterVersion, limit)).map(rows -> Sql.list(rows, WafPolicyRepository::map));
  }

  /** See {@link WafPolicyModule#inForce}: the latest version of each mode per team+environment; a shadow one only when newer. */
  static Future<List<JsonObject>> inForce(SqlClient snapshot) {
    return snapshot.query("SELECT DISTINCT ON (team, environment, mode) team, environment, version, mode, document FROM waf_policies "
            + "ORDER BY team, environment, mode, version DESC").execute()
        .map(rows -> {
          java.util.Map<String, Long> enforced = new java.util.HashMap<>();
          List<JsonObject> all = Sql.list(rows, r -> new JsonObject().put("team", r.getString("team")).put("environment", r.getString("environment"))
              .put("version", r.getLong("version")).put("mode", r.getString("mode")).put("policy", new JsonObject(r.getString("document"))));
          for (JsonObject o : all) if ("enforce".equals(o.getString("mode"))) enforced.put(o.getString("team") + "/" + o.getString("environment"), o.getLong("version"));
          List<JsonObject> out = new java.util.ArrayList<>();
          for (JsonObject o : all) {
            long e = enforced.getOrDefault(o.getString("team") + "/" + o.getString("environment"), 0L);
            if ("enforce".equals(o.getString("mode")) || o.getLong("version") > e) out.add(o);
          }
          out.sort(java.util.Comparator.comparingLong(o -> o.getLong("version")));
          return out;
        });
  }

  /** This team+environment's writers one at a time (other teams never wait): held to the transaction's end. */
  static Future<Void> lock(SqlClient tx, String team, String env) {
    return tx.preparedQuery("SELECT pg_advisory_xact_lock(hashtext($1))").execute(Tuple.of("waf:" + team + "/" + env)).mapEmpty();
  }

  static Future<Void> insert(SqlClient tx, Stored s) {
    return tx.preparedQuery("INSERT INTO waf_policies (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
        .execute(Tuple.from(new Object[] {s.team(), s.environment(), s.version(), s.document(), s.mode(), Sql.odt(s.createdAt()), s.actorType(),
            s.actorId(), s.actorName(), s.restoredFrom()}))
        .mapEmpty();
  }

  private static Stored map(Row r) {
    return new Stored(r.getString("team"), r.getString("environment"), r.getLong("version"), r.getString("document"), r.getString("mode"),
        r.getOffsetDateTime("created_at").toInstant(), r.getString("actor_type"), r.getString("actor_id"), r.getString("actor_name"),
        r.getLong("restored_from"));
  }
}
