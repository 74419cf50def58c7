package io.meshplane.ops;

import io.meshplane.access.Boundary;
import io.meshplane.audit.Actor;
import io.meshplane.common.Refusal;
import io.meshplane.common.Sql;
import io.meshplane.changes.ChangeLog;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

/**
 * The operations feature's SQL: the {@code operations} table, and the columns of {@code nodes} it owns
 * (bound {@code services}, assigned {@code ingress}; the relay assignment when a move is requested or
 * undone). Every change of a node's work is made under the node row's lock and ends with a
 * {@code work} entry in the change log computed in the same transaction, so entries for one node
 * follow each other in commit order and each holds the node's whole work. The hostnames that active
 * and draining ingress hold, mesh-wide, are rows of {@code ingress_hostnames} (V11).
 */
final class OpsRepository {
  static final String OPEN = "('pending', 'delivered')";
  private static final String COLUMNS = "id, node_id, team, environment, kind, status, target, actor_type, actor_id, actor_name, "
      + "requested_at, deadline, delivered_at, completed_at, result";

  /** A node as an operation sees it, read under its row lock. */
  record NodeRow(String id, String name, String team, String environment, String relay, JsonArray ingress, String[] services, String key) {}

  /** An operation row. */
  record Operation(String id, String nodeId, String team, String environment, String kind, String status, JsonObject target,
      Actor requestedBy, Instant requestedAt, Instant deadline, Instant deliveredAt, Instant completedAt, JsonObject result) {}

  private final Pool pool;
  private final Pool reads;

  /** @param reads the read pool (its own connections, postgres.read_timeout per statement) for the fleet-wide list */
  OpsRepository(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  /** The node inside {@code caller}, locked until the transaction ends (serialises changes of one node's work); null when absent. */
  static Future<NodeRow> lockNode(SqlClient tx, Boundary caller, String id) {
    return tx.preparedQuery("SELECT id, name, team, environment, relay, ingress, services, COALESCE(NULLIF(reported_key, ''), public_key) AS key "
            + "FROM nodes WHERE " + Sql.inScope(1, 2) + " AND id = $3 FOR UPDATE")
        .execute(Tuple.of(caller.team(), caller.environment(), id))
        .map(rows -> {
          if (rows.size() == 0) return null;
          Row r = rows.iterator().next();
          return new NodeRow(r.getString("id"), r.getString("name"), r.getString("team"), r.getString("environment"), r.getString("relay"),
              (JsonArray) r.getJson("ingress"), r.getArrayOfStrings("services"), r.getString("key"));
        });
  }

  /** Inserts a pending operation; a second open one of the kind for the node is a 409. */
  static Future<Void> insert(SqlClient tx, String id, NodeRow node, String kind, JsonObject target, Actor actor, Instant now,
      Instant deadline) {
    return tx.preparedQuery("INSERT INTO operations (id, node_id, team, environment, kind, status, target, actor_type, actor_id, actor_name, "
            + "requested_at, deadline) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11)")
        .execute(Tuple.from(new Object[] {id, node.id(), node.team(), node.environment(), kind, target, actor.type(), actor.id(),
            actor.name(), Sql.odt(now), Sql.odt(deadline)}))
        .<Void>mapEmpty()
        .recover(t -> t instanceof PgException pg && "23505".equals(pg.getSqlState())
            ? Future.failedFuture(Refusal.conflict("node " + node.id() + " already has an open " + kind + " operation; wait for it to complete"))
            : Future.failedFuture(t));
  }

  static Future<Void> setServices(SqlClient tx, String nodeId, String[] services, Instant now) {
    return tx.preparedQuery("UPDATE nodes SET services = $2, updated_at = $3 WHERE id = $1")
        .execute(Tuple.of(nodeId, services, Sql.odt(now))).mapEmpty();
  }

  static Future<Void> setIngress(SqlClient tx, String nodeId, JsonArray ingress, Instant now) {
    return tx.preparedQuery("UPDATE nodes SET ingress = $2, updated_at = $3 WHERE id = $1")
        .execute(Tuple.of(nodeId, ingress, Sql.odt(now))).mapEmpty();
  }

  /**
   * Holds {@code hostname} (compared without case) for the node's ingress {@code ingress}: false when an
   * ingress of any node already holds it, decided by the table's primary key (a concurrent holder makes
   * this wait for its commit). The transaction cannot go on after false: the caller fails it.
   */
  static Future<Boolean> holdHostname(SqlClient tx, String nodeId, String ingress, String hostname) {
    return tx.preparedQuery("INSERT INTO ingress_hostnames (hostname, node_id, ingress) VALUES ($1, $2, $3)")
        .execute(Tuple.of(hostname.toLowerCase(Locale.ROOT), nodeId, ingress))
        .map(true)
        .recover(t -> t instanceof PgException pg && "23505".equals(pg.getSqlState()) && "ingress_hostnames_pkey".equals(pg.getConstraint())
            ? Future.succeededFuture(false) : Future.failedFuture(t));
  }

  /**
   * Whether ingress routes of a team other than {@code team} use {@code hostname}, exactly or by the
   * wildcard one label above it (API.md §19: a hostname belongs to one team, and a wildcard holds the
   * names under it). Reads the ingress feature's table in this transaction, under the clock's lock
   * that every route change takes first.
   */
  static Future<Boolean> routedByOtherTeam(SqlClient tx, String hostname, String team) {
    String name = hostname.toLowerCase(Locale.ROOT);
    int dot = name.indexOf('.');
    String above = dot > 0 && name.indexOf('.', dot + 1) > 0 ? "*" + name.substring(dot) : name;
    return tx.preparedQuery("SELECT 1 FROM ingress_routes WHERE hostname IN ($1, $3) AND team <> $2 LIMIT 1")
        .execute(Tuple.of(name, team, above)).map(rows -> rows.size() > 0);
  }

  /** Gives back the hostname the node's ingress {@code ingress} holds, if any (drained or replaced). */
  static Future<Void> releaseHostname(SqlClient tx, String nodeId, String ingress) {
    return tx.preparedQuery("DELETE FROM ingress_hostnames WHERE node_id = $1 AND ingress = $2").execute(Tuple.of(nodeId, ingress)).mapEmpty();
  }

  /** Sets the relay assignment and logs it (peers carry the relay); the entry is a {@code relay} change. */
  static Future<Long> setRelay(SqlClient tx, String nodeId, String relay, Instant now) {
    return tx.preparedQuery("UPDATE nodes SET relay = $2, updated_at = $3 WHERE id = $1")
        .execute(Tuple.of(nodeId, relay, Sql.odt(now)))
        .compose(v -> ChangeLog.append(tx, "relay", new JsonObject().put("id", nodeId).put("relay", relay)));
  }

  private static final String WORK = """
      SELECT jsonb_build_object('node', n.id, 'services', to_jsonb(n.services), 'ingress', n.ingress,
             'open', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', o.id, 'kind', o.kind, 'target', o.target) ORDER BY o.id)
                               FROM operations o WHERE o.node_id = n.id AND o.status IN """ + OPEN + "), '[]'::jsonb)) AS work FROM nodes n ";

  /** Appends the node's whole work after this transaction's change to the change log (last: the clock lock is held to the commit). */
  static Future<Long> logWork(SqlClient tx, String nodeId) {
    return tx.preparedQuery(WORK + "WHERE n.id = $1").execute(Tuple.of(nodeId))
        .compose(rows -> rows.size() == 0 ? Future.succeededFuture(-1L)
            : ChangeLog.append(tx, "work", (JsonObject) rows.iterator().next().getJson("work")));
  }

  /** The work of every node that has any, in the feed's snapshot. */
  static Future<List<JsonObject>> allWork(SqlClient snapshot) {
    return snapshot.query(WORK + "WHERE n.services <> '{}' OR n.ingress <> '[]' OR EXISTS "
            + "(SELECT 1 FROM operations o WHERE o.node_id = n.id AND o.status IN " + OPEN + ")").execute()
        .map(rows -> Sql.list(rows, r -> (JsonObject) r.getJson("work")));
  }

  /** Marks operations delivered (those still pending); no change-log entry: what a node is sent does not depend on it. */
  Future<Void> markDelivered(String[] ids, Instant at) {
    return pool.preparedQuery("UPDATE operations SET status = 'delivered', delivered_at = $2 WHERE id = ANY($1) AND status = 'pending'")
        .execute(Tuple.of(ids, Sql.odt(at))).mapEmpty();
  }

  /**
   * Closes an open operation of {@code nodeId} with {@code status} and {@code result}; completes with the
   * row as it was (kind, target) or null when it is not open any more (another replica closed it first).
   */
  static Future<Operation> close(SqlClient tx, String opId, String nodeId, String status, JsonObject result, Instant now) {
    return tx.preparedQuery("UPDATE operations SET status = $3, result = $4, completed_at = $5, "
            + "delivered_at = CASE WHEN $3 = 'expired' THEN delivered_at ELSE COALESCE(delivered_at, $5) END "
            + "WHERE id = $1 AND node_id = $2 AND status IN " + OPEN + " RETURNING " + COLUMNS)
        .execute(Tuple.of(opId, nodeId, status, result, Sql.odt(now)))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** Open operations past their deadline, oldest first: (id, node id). */
  Future<List<String[]>> overdue(Instant now, int limit) {
    return pool.preparedQuery("SELECT id, node_id FROM operations WHERE status IN " + OPEN + " AND deadline < $1 ORDER BY deadline LIMIT $2")
        .execute(Tuple.of(Sql.odt(now), limit))
        .map(rows -> Sql.list(rows, r -> new String[] {r.getString("id"), r.getString("node_id")}));
  }

  Future<Operation> find(Boundary caller, String opId) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM operations WHERE " + Sql.inScope(1, 2) + " AND id = $3")
        .execute(Tuple.of(caller.team(), caller.environment(), opId))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** A page of a node's operations in id order (oldest first), optionally of one status. */
  Future<List<Operation>> ofNode(Boundary caller, String nodeId, String status, String afterId, int limit) {
    return pool.preparedQuery("SELECT " + COLUMNS + " FROM operations WHERE " + Sql.inScope(1, 2) + " AND node_id = $3"
            + " AND ($4::text IS NULL OR status = $4) AND ($5::text IS NULL OR id > $5) ORDER BY id LIMIT $6")
        .execute(Tuple.from(new Object[] {caller.team(), caller.environment(), nodeId, status, afterId, limit}))
        .map(rows -> Sql.list(rows, OpsRepository::map));
  }

  /** A page of the operations inside the caller's boundary, newest first, filtered ({@link OpsQuery}); on the read pool. */
  Future<List<Operation>> list(Boundary caller, OpsQuery.Filter filter, Instant afterAt, String afterId, int limit) {
    OpsQuery.Statement q = OpsQuery.page(COLUMNS, caller, filter, afterAt, afterId, limit);
    return reads.preparedQuery(q.sql()).execute(Tuple.from(q.params())).map(rows -> Sql.list(rows, OpsRepository::map));
  }

  /** Operations of the boundary still pending or delivered (the partial index on open operations serves it). */
  Future<Long> openCount(Boundary caller) {
    return pool.preparedQuery("SELECT count(*) FROM operations WHERE " + Sql.inScope(1, 2) + " AND status IN " + OPEN)
        .execute(Tuple.of(caller.team(), caller.environment()))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** Whether the node exists inside the caller's boundary (an empty operations page of a missing node is a 404). */
  Future<Boolean> nodeExists(Boundary caller, String nodeId) {
    return pool.preparedQuery("SELECT 1 FROM nodes WHERE " + Sql.inScope(1, 2) + " AND id = $3")
        .execute(Tuple.of(caller.team(), caller.environment(), nodeId)).map(rows -> rows.size() > 0);
  }

  private static Operation map(Row r) {
    return new Operation(r.getString("id"), r.getString("node_id"), r.getString("team"), r.getString("environment"), r.getString("kind"),
        r.getString("status"), (JsonObject) r.getJson("target"), new Actor(r.getString("actor_type"), r.getString("actor_id"),
            r.getString("actor_name")), Sql.instant(r, "requested_at"), Sql.instant(r, "deadline"), Sql.instant(r, "delivered_at"),
        Sql.instant(r, "completed_at"), (JsonObject) r.getJson("result"));
  }
}
