package io.meshplane.node;

import io.meshplane.access.Boundary;
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

/**
 * The SQL of node records (the live columns of {@code nodes} are written by the heartbeat feature's
 * write-behind). Reads are filtered by the caller's boundary: what is outside does not exist.
 */
final class NodeRepository {
  private static final String COLUMNS = "id, name, team, environment, host(address) AS address, public_key, tags, relay, services, ingress, "
      + "endpoints, routes, reported_relay, COALESCE(NULLIF(reported_key, ''), public_key) AS current_key, telemetry::text AS telemetry, "
      + "heartbeat_at, created_at, updated_at, COALESCE(acknowledged_peers, -1) AS ack_peers, COALESCE(acknowledged_acl, -1) AS ack_acl, "
      + "acknowledged_at";
  private static final String IN_SCOPE = Sql.inScope(1, 2);

  private final Pool pool;

  private final Pool reads;

  /** @param reads the read pool (its own connections, postgres.read_timeout per statement) for pages and counts */
  public NodeRepository(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  /**
   * Inserts a node with the next free address of the pool. Addresses come from a sequence, so replicas
   * enrolling at the same moment never get the same one (and a UNIQUE constraint backs that up).
   * Completes with the address (without prefix length), or null when the pool is used up.
   */
  public Future<String> insert(SqlClient tx, String id, String name, String team, String env, String publicKey, String[] tags,
      String relay, String poolBase, long poolSize, Instant now) {
    String sql = """
        WITH a AS (SELECT nextval('node_address_seq') AS n)
        INSERT INTO nodes (id, name, team, environment, address, public_key, tags, relay, created_at, updated_at)
        SELECT $1, $2, $3, $4, $5::text::inet + a.n, $6, $7, $10, $8, $8 FROM a WHERE a.n < $9
        RETURNING host(address) AS address""";
    return tx.preparedQuery(sql)
        .execute(Tuple.from(new Object[] {id, name, team, env, poolBase, publicKey, tags, Sql.odt(now), poolSize - 1, relay}))
        .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getString("address"))
        .recover(t -> {
          if (t instanceof PgException pg && "23505".equals(pg.getSqlState())) {
            if (String.valueOf(pg.getConstraint()).contains("name")) {
              return Future.failedFuture(Refusal.conflict("a node named " + name + " already exists in " + team + "/" + env));
            }
            if (NodeKeys.CONSTRAINT.equals(pg.getConstraint())) return Future.failedFuture(NodeKeys.inUse());
            // an address handed out under an earlier nodes.address_pool: the next attempt takes the next one
            if (String.valueOf(pg.getConstraint()).contains("address")) {
              return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "conflict", "the allocated address is already in use; retry"));
            }
          }
          return Future.failedFuture(t);
        });
  }

  public Future<NodeRecord> find(SqlClient client, Boundary caller, String id) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM nodes WHERE " + IN_SCOPE + " AND id = $3")
        .execute(Tuple.of(caller.team(), caller.environment(), id))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /**
   * A page of nodes as {@code listing} selects and orders them, on the read pool. {@code status} is
   * evaluated on the flushed heartbeat time (at most one flush interval old); the live overlay is
   * applied by the caller.
   */
  public Future<List<NodeRecord>> list(NodeListing listing, NodeSort sort, List<String> after, int fetch) {
    NodeListing.Statement q = listing.page(COLUMNS, sort, after, fetch);
    return reads.preparedQuery(q.sql()).execute(q.params()).map(rows -> Sql.list(rows, NodeRepository::map));
  }

  /**
   * How many nodes {@code listing} selects: {@code {count, estimated}}. Exact up to
   * {@link NodeListing#COUNT_CAP} (a scan that stops at the cap + 1); beyond, the planner's estimate of
   * the same filter (no row read), never below the cap + 1, with estimated = 1.
   */
  public Future<long[]> count(NodeListing listing) {
    NodeListing.Statement capped = listing.cappedCount();
    return reads.preparedQuery(capped.sql()).execute(capped.params()).compose(rows -> {
      long n = rows.iterator().next().getLong(0);
      if (n <= NodeListing.COUNT_CAP) return Future.succeededFuture(new long[] {n, 0});
      NodeListing.Statement est = listing.estimate();
      return reads.preparedQuery(est.sql()).execute(est.params()).map(plan -> {
        Object json = plan.iterator().next().getValue(0);
        io.vertx.core.json.JsonArray a = json instanceof io.vertx.core.json.JsonArray arr ? arr
            : new io.vertx.core.json.JsonArray(String.valueOf(json));
        long planned = a.getJsonObject(0).getJsonObject("Plan").getNumber("Plan Rows").longValue();
        return new long[] {Math.max(planned, NodeListing.COUNT_CAP + 1L), 1};
      });
    });
  }

  /**
   * How many nodes of the boundary are pending, online and stale, on the flushed heartbeat times (as
   * the list's status filter): {total, pending, stale}; online is the rest. One scan of the boundary's
   * rows (an index-only count is not possible on a timestamp comparison): the panel's overview asks it
   * at most every few seconds per open page.
   */
  public Future<long[]> counts(Boundary caller, Instant staleCutoff) {
    return reads.preparedQuery("SELECT count(*), count(*) FILTER (WHERE heartbeat_at IS NULL),"
            + " count(*) FILTER (WHERE heartbeat_at < $3) FROM nodes WHERE " + IN_SCOPE)
        .execute(Tuple.of(caller.team(), caller.environment(), Sql.odt(staleCutoff)))
        .map(rows -> {
          var row = rows.iterator().next();
          return new long[] {row.getLong(0), row.getLong(1), row.getLong(2)};
        });
  }

  /**
   * The {@code limit} stale nodes of the boundary (flushed heartbeat before {@code staleCutoff}, as the
   * list's status filter) that went stale last: latest heartbeat first, then id. No index on
   * heartbeat_at (it would cost the write-behind its HOT updates, V10): one scan of the boundary's rows
   * with a top-N sort of {@code limit} rows, like {@link #counts}; on the read pool.
   */
  public Future<io.vertx.core.json.JsonArray> staleFirst(Boundary caller, Instant staleCutoff, int limit) {
    return reads.preparedQuery("SELECT id, name, team, environment, heartbeat_at FROM nodes WHERE " + IN_SCOPE
            + " AND heartbeat_at < $3 ORDER BY heartbeat_at DESC, id LIMIT $4")
        .execute(Tuple.of(caller.team(), caller.environment(), Sql.odt(staleCutoff), limit))
        .map(NodeRepository::briefs);
  }

  /** Id, name, team, environment and flushed heartbeat of these nodes inside the boundary (point reads by key; absent ones are left out). */
  public Future<io.vertx.core.json.JsonArray> briefs(Boundary caller, List<String> ids) {
    if (ids.isEmpty()) return Future.succeededFuture(new io.vertx.core.json.JsonArray());
    return pool.preparedQuery("SELECT id, name, team, environment, heartbeat_at FROM nodes WHERE " + IN_SCOPE + " AND id = ANY($3) ORDER BY id")
        .execute(Tuple.of(caller.team(), caller.environment(), ids.toArray(new String[0])))
        .map(NodeRepository::briefs);
  }

  private static io.vertx.core.json.JsonArray briefs(io.vertx.sqlclient.RowSet<Row> rows) {
    io.vertx.core.json.JsonArray out = new io.vertx.core.json.JsonArray();
    for (Row r : rows) {
      java.time.OffsetDateTime at = r.getOffsetDateTime("heartbeat_at");
      out.add(new io.vertx.core.json.JsonObject().put("id", r.getString("id")).put("name", r.getString("name"))
          .put("team", r.getString("team")).put("environment", r.getString("environment"))
          .put("heartbeat", at == null ? null : io.meshplane.common.Times.format(at.toInstant())));
    }
    return out;
  }

  /** Nodes per relay inside {@code caller}'s boundary (relays without nodes are absent). */
  public Future<java.util.Map<String, Long>> relayCounts(Boundary caller) {
    return reads.preparedQuery("SELECT relay, count(*) AS n FROM nodes WHERE " + IN_SCOPE + " AND relay <> '' GROUP BY relay")
        .execute(Tuple.of(caller.team(), caller.environment()))
        .map(rows -> {
          java.util.Map<String, Long> out = new java.util.HashMap<>();
          for (Row r : rows) out.put(r.getString("relay"), r.getLong("n"));
          return out;
        });
  }

  /** Sets a node's tags; false when the node is gone. */
  public Future<Boolean> retag(SqlClient tx, String id, String[] tags, Instant now) {
    return tx.preparedQuery("UPDATE nodes SET tags = $2, updated_at = $3 WHERE id = $1")
        .execute(Tuple.of(id, tags, Sql.odt(now))).map(rows -> rows.rowCount() == 1);
  }

  public Future<Boolean> delete(SqlClient tx, String id) {
    return tx.preparedQuery("DELETE FROM nodes WHERE id = $1").execute(Tuple.of(id)).map(rows -> rows.rowCount() == 1);
  }

  private static NodeRecord map(Row r) {
    return new NodeRecord(r.getString("id"), r.getString("name"), r.getString("team"), r.getString("environment"),
        r.getString("address"), r.getString("current_key"), r.getArrayOfStrings("tags"), r.getString("relay"),
        r.getArrayOfStrings("services"), (io.vertx.core.json.JsonArray) r.getJson("ingress"), r.getArrayOfStrings("endpoints"), r.getArrayOfStrings("routes"),
        r.getString("reported_relay"), r.getString("telemetry"), Sql.instant(r, "heartbeat_at"), Sql.instant(r, "created_at"),
        Sql.instant(r, "updated_at"), new NodeRecord.Acknowledged(r.getLong("ack_peers"), r.getLong("ack_acl"), Sql.instant(r, "acknowledged_at")));
  }
}
