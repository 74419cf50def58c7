package io.meshplane.node;

import io.meshplane.common.Refusal;
import io.meshplane.http.Page;
import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;

/** The SQL of nodes and node events. Reads are filtered by the caller's scope: what is outside does not exist. */
public final class NodeRepository {
  private static final String COLUMNS = "id, name, team, environment, host(address) AS address, public_key, tags, relay, services, "
      + "endpoints, routes, reported_relay, telemetry::text AS telemetry, heartbeat_at, created_at, updated_at";
  private static final String IN_SCOPE = "($1 = '*' OR team = $1) AND ($2 = '*' OR environment = $2)";

  /** Thrown when the name is taken in the team and environment. */
  public static final class DuplicateName extends RuntimeException {
    DuplicateName() {
      super(null, null, false, false);
    }
  }

  private final Pool pool;

  public NodeRepository(Pool pool) {
    this.pool = pool;
  }

  /**
   * Inserts a node with the next free address of the pool. Addresses come from a sequence, so replicas
   * enrolling at the same moment never get the same one (and a UNIQUE constraint backs that up).
   * Completes with the address (without prefix length), or null when the pool is used up.
   */
  public Future<String> insert(SqlClient tx, String id, String name, String team, String env, String publicKey, String[] tags,
      String poolBase, long poolSize, Instant now) {
    String sql = """
        WITH a AS (SELECT nextval('node_address_seq') AS n)
        INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at)
        SELECT $1, $2, $3, $4, $5::text::inet + a.n, $6, $7, $8, $8 FROM a WHERE a.n < $9
        RETURNING host(address) AS address""";
    return tx.preparedQuery(sql)
        .execute(Tuple.from(new Object[] {id, name, team, env, poolBase, publicKey, tags, Sql.odt(now), poolSize - 1}))
        .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getString("address"))
        .recover(t -> {
          if (t instanceof PgException pg && "23505".equals(pg.getSqlState())) {
            if (String.valueOf(pg.getConstraint()).contains("name")) return Future.failedFuture(new DuplicateName());
            // an address handed out under an earlier nodes.address_pool: the next attempt takes the next one
            if (String.valueOf(pg.getConstraint()).contains("address")) {
              return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "conflict", "the allocated address is already in use; retry"));
            }
          }
          return Future.failedFuture(t);
        });
  }

  public Future<NodeRecord> find(SqlClient client, String team, String env, String id) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM nodes WHERE " + IN_SCOPE + " AND id = $3")
        .execute(Tuple.of(team, env, id))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /**
   * A page of nodes in id order. {@code status} is evaluated on the flushed heartbeat time (at most one
   * flush interval old); the live overlay is applied by the caller.
   */
  public Future<List<NodeRecord>> list(String team, String env, String status, Instant staleCutoff, String tag, String namePrefix,
      Page page) {
    String sql = "SELECT " + COLUMNS + " FROM nodes WHERE " + IN_SCOPE
        + " AND ($3::text IS NULL OR id > $3)"
        + " AND ($4::text IS NULL OR $4 = ANY (tags))"
        + " AND ($5::text IS NULL OR starts_with(name, $5))"
        + " AND ($6::text IS NULL"
        + "      OR ($6 = 'pending' AND heartbeat_at IS NULL)"
        + "      OR ($6 = 'online' AND heartbeat_at >= $7)"
        + "      OR ($6 = 'stale' AND heartbeat_at < $7))"
        + " ORDER BY id LIMIT $8";
    return pool.preparedQuery(sql)
        .execute(Tuple.from(new Object[] {team, env, page.afterPart(0), tag, namePrefix, status, Sql.odt(staleCutoff), page.fetch()}))
        .map(rows -> Sql.list(rows, NodeRepository::map));
  }

  public Future<Boolean> delete(SqlClient tx, String id) {
    return tx.preparedQuery("DELETE FROM nodes WHERE id = $1").execute(Tuple.of(id)).map(rows -> rows.rowCount() == 1);
  }

  /**
   * One multi-row write of live fields (UNNEST arrays): a single round trip per batch, only moving
   * heartbeat_at forwards (a row that holds this heartbeat already is not written again). A null field
   * (endpoints, routes, relay or telemetry) means "unchanged since this writer's previous write of the
   * row", whose heartbeat time {@code previous} gives: the column keeps its value, and PostgreSQL
   * neither receives nor parses it. A row with a null field is written only if it still holds that
   * previous write (else someone else wrote it since: it is left out of the count, and the caller
   * sends whole rows).
   */
  public Future<Integer> flushLive(String[] ids, Long[] heartbeats, Long[] previous, String[] endpoints, String[] routes,
      String[] relays, String[] telemetry) {
    String sql = """
        UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
               endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
               reported_relay = COALESCE(u.relay, n.reported_relay), telemetry = COALESCE(u.tel::jsonb, n.telemetry)
        FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[]) AS u(id, hb, prev, ep, rt, relay, tel)
        WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'))
          AND (u.prev IS NULL OR n.heartbeat_at = (timestamptz 'epoch' + u.prev * interval '1 millisecond'))""";
    return pool.preparedQuery(sql)
        .execute(Tuple.tuple().addArrayOfString(ids).addArrayOfLong(heartbeats).addArrayOfLong(previous)
            .addArrayOfString(endpoints).addArrayOfString(routes).addArrayOfString(relays).addArrayOfString(telemetry))
        .map(rows -> rows.rowCount());
  }

  /** Which of these ids have no node row (deleted): their live entries are leftovers to drop. */
  public Future<List<String>> missing(String[] ids) {
    return pool.preparedQuery("SELECT u.id FROM UNNEST($1::text[]) AS u(id) WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = u.id)")
        .execute(Tuple.tuple().addArrayOfString(ids))
        .map(rows -> Sql.list(rows, r -> r.getString(0)));
  }

  /** Records state transitions (node.stale / node.online); events of nodes deleted meanwhile are dropped. */
  public Future<Integer> insertEvents(String[] eventIds, Long[] at, String[] types, String[] nodeIds, Long[] lastHeartbeat) {
    String sql = """
        INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
        SELECT u.eid, (timestamptz 'epoch' + u.at * interval '1 millisecond'), u.type, n.id, n.name, n.team, n.environment, (timestamptz 'epoch' + u.hb * interval '1 millisecond')
        FROM UNNEST($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[]) AS u(eid, at, type, node_id, hb)
        JOIN nodes n ON n.id = u.node_id
        ON CONFLICT (id) DO NOTHING""";
    return pool.preparedQuery(sql)
        .execute(Tuple.tuple().addArrayOfString(eventIds).addArrayOfLong(at).addArrayOfString(types).addArrayOfString(nodeIds)
            .addArrayOfLong(lastHeartbeat))
        .map(rows -> rows.rowCount());
  }

  public Future<Long> countPending() {
    return pool.query("SELECT count(*) FROM nodes WHERE heartbeat_at IS NULL").execute()
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** Nodes with a flushed heartbeat, for seeding the live map after a cold start of the whole cluster. */
  public Future<List<NodeRecord>> withHeartbeat(String afterId, int limit) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM nodes WHERE heartbeat_at IS NOT NULL AND id > $1 ORDER BY id LIMIT $2")
        .execute(Tuple.of(afterId, limit))
        .map(rows -> Sql.list(rows, NodeRepository::map));
  }



  private static NodeRecord map(Row r) {
    return new NodeRecord(r.getString("id"), r.getString("name"), r.getString("team"), r.getString("environment"),
        r.getString("address"), r.getString("public_key"), r.getArrayOfStrings("tags"), r.getString("relay"),
        r.getArrayOfStrings("services"), r.getArrayOfStrings("endpoints"), r.getArrayOfStrings("routes"),
        r.getString("reported_relay"), r.getString("telemetry"), Sql.instant(r, "heartbeat_at"), Sql.instant(r, "created_at"),
        Sql.instant(r, "updated_at"));
  }
}
