package io.meshplane.ingress;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The SQL of ingress routes ({@code ingress_routes}, {@code ingress_versions}, V22). Writes happen in the
 * service's transactions, under the change log's clock lock; the node's columns it reads (team,
 * environment, address, services, tags) are read inside those transactions, as the owners' tables
 * rule allows.
 */
final class IngressRepository {
  /**
   * One route as stored. {@code state}: what its target is now ({@code active}, {@code service_unbound},
   * {@code target_missing}, computed on read by {@link #STATE}); null where a statement does not read it
   * (the change log's route sets, the follower's load).
   */
  record Route(String id, String team, String environment, int position, String hostname, String pathPrefix, String targetNode,
      String targetService, String exposure, String tls, String ingressTag, Instant createdAt, Instant updatedAt, String state) {
    Route with(int newPosition) {
      return new Route(id, team, environment, newPosition, hostname, pathPrefix, targetNode, targetService, exposure, tls, ingressTag,
          createdAt, updatedAt, state);
    }

    /** The form the change log and the follower carry: what an ingress node needs of the route (no times). */
    JsonObject entry() {
      return new JsonObject().put("id", id).put("position", position).put("hostname", hostname).put("path_prefix", pathPrefix)
          .put("exposure", exposure).put("tls", tls).put("ingress_tag", ingressTag)
          .put("target", new JsonObject().put("node", targetNode).put("service", targetService));
    }
  }

  /** What a route's validation reads of a node: where it lives, its mesh address, its bound services ({@code name:port}). */
  record NodeRow(String id, String name, String team, String environment, String address, String[] services) {}

  private static final String COLUMNS = "id, team, environment, position, hostname, path_prefix, target_node, target_service, exposure, tls, "
      + "ingress_tag, created_at, updated_at";

  /**
   * The route's columns ({@code r}) and its target's state from the node's row ({@code n}, LEFT JOINed on
   * its primary key: a deleted node is no row). Bound services are {@code name:port}; a name has no ':'.
   */
  private static final String STATE = "CASE WHEN n.id IS NULL THEN 'target_missing' "
      + "WHEN EXISTS (SELECT 1 FROM unnest(n.services) AS s WHERE split_part(s, ':', 1) = r.target_service) THEN 'active' "
      + "ELSE 'service_unbound' END AS state";
  private static final String WITH_STATE = "SELECT r.id, r.team, r.environment, r.position, r.hostname, r.path_prefix, r.target_node, "
      + "r.target_service, r.exposure, r.tls, r.ingress_tag, r.created_at, r.updated_at, " + STATE;

  private final Pool pool;
  private final Pool reads;

  IngressRepository(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  Pool pool() {
    return pool;
  }

  Future<NodeRow> node(SqlClient client, String id) {
    return client.preparedQuery("SELECT id, name, team, environment, host(address) AS address, services FROM nodes WHERE id = $1")
        .execute(Tuple.of(id))
        .map(rows -> {
          if (rows.size() == 0) return null;
          Row r = rows.iterator().next();
          return new NodeRow(r.getString("id"), r.getString("name"), r.getString("team"), r.getString("environment"), r.getString("address"),
              r.getArrayOfStrings("services"));
        });
  }

  Future<NodeRow> node(String id) {
    return node(pool, id);
  }

  Future<Long> version(SqlClient client, String team, String env) {
    return client.preparedQuery("SELECT version FROM ingress_versions WHERE team = $1 AND environment = $2").execute(Tuple.of(team, env))
        .map(rows -> rows.size() == 0 ? 0L : rows.iterator().next().getLong(0));
  }

  Future<Long> version(String team, String env) {
    return version(pool, team, env);
  }

  /** The next version of the team+environment's routes (1 for the first change). */
  Future<Long> bump(SqlClient tx, String team, String env) {
    return tx.preparedQuery("INSERT INTO ingress_versions (team, environment, version) VALUES ($1, $2, 1) "
            + "ON CONFLICT (team, environment) DO UPDATE SET version = ingress_versions.version + 1 RETURNING version")
        .execute(Tuple.of(team, env)).map(rows -> rows.iterator().next().getLong(0));
  }

  Future<Route> get(SqlClient client, String id) {
    return client.preparedQuery(WITH_STATE + " FROM ingress_routes r LEFT JOIN nodes n ON n.id = r.target_node WHERE r.id = $1")
        .execute(Tuple.of(id))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next()));
  }

  /** Every route of a team+environment, in order: the change log entry's content. */
  Future<List<Route>> all(SqlClient client, String team, String env) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM ingress_routes WHERE team = $1 AND environment = $2 ORDER BY position")
        .execute(Tuple.of(team, env)).map(rows -> Sql.list(rows, IngressRepository::map));
  }

  /**
   * A page of routes inside the boundary ({@code team}, {@code env}: a slug or {@code *}), in (team,
   * environment, position) order, after that key when given; {@code hostname} null for any. One
   * statement: the page is cut first, then each of its rows joined to its target's node row.
   */
  Future<List<Route>> list(String team, String env, String hostname, List<String> after, int limit) {
    List<Object> params = new ArrayList<>();
    StringBuilder sql = new StringBuilder("SELECT " + COLUMNS + " FROM ingress_routes WHERE true");
    sql.append(Sql.inScope(team, env, params));
    if (hostname != null) {
      params.add(hostname);
      sql.append(" AND hostname = $").append(params.size());
    }
    if (after != null) {
      params.add(after.get(0));
      params.add(after.get(1));
      params.add(Integer.parseInt(after.get(2)));
      int n = params.size();
      sql.append(" AND (team, environment, position) > ($").append(n - 2).append(", $").append(n - 1).append(", $").append(n).append(")");
    }
    params.add(limit);
    sql.append(" ORDER BY team, environment, position LIMIT $").append(params.size());
    String joined = WITH_STATE + " FROM (" + sql + ") r LEFT JOIN nodes n ON n.id = r.target_node ORDER BY r.team, r.environment, r.position";
    return reads.preparedQuery(joined).execute(Tuple.from(params)).map(rows -> Sql.list(rows, IngressRepository::map));
  }

  /**
   * The team that holds {@code hostname} if it is not {@code team}: by a route, or by a node's ingress
   * (API.md §9); null if none. A wildcard holds the names one label under it, so a name is also held by
   * another team's wildcard above it, and a wildcard by another team's names under it: those whose
   * parent (the name after its first label) is the wildcard's, found through V25's indexes on that
   * parent. The routes' index carries the team and is read on the other teams' side only, so the check
   * costs a few index pages however many names the team itself has under the wildcard.
   */
  Future<String> otherOwner(SqlClient tx, String hostname, String team) {
    if (!hostname.startsWith("*.")) {
      String above = wildcardAbove(hostname);
      return tx.preparedQuery("SELECT team FROM ingress_routes WHERE hostname IN ($1, $3) AND team <> $2 "
              + "UNION ALL SELECT n.team FROM ingress_hostnames h JOIN nodes n ON n.id = h.node_id WHERE h.hostname = $1 AND n.team <> $2 LIMIT 1")
          .execute(Tuple.of(hostname, team, above == null ? hostname : above))
          .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getString(0));
    }
    String parent = "substr(%1$s, strpos(%1$s, '.') + 1)";
    return tx.preparedQuery("SELECT team FROM ingress_routes WHERE (hostname = $1 AND team <> $2)"
            + " OR (" + parent.formatted("hostname") + " = $3 AND team < $2) OR (" + parent.formatted("hostname") + " = $3 AND team > $2)"
            + " UNION ALL SELECT n.team FROM ingress_hostnames h JOIN nodes n ON n.id = h.node_id WHERE " + parent.formatted("h.hostname")
            + " = $3 AND n.team <> $2 LIMIT 1")
        .execute(Tuple.of(hostname, team, hostname.substring(2)))
        .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getString(0));
  }

  /** The wildcard that would hold {@code name} ({@code *.example.com} for {@code a.example.com}), or null: none may (too few labels). */
  static String wildcardAbove(String name) {
    int dot = name.indexOf('.');
    return dot > 0 && name.indexOf('.', dot + 1) > 0 ? "*" + name.substring(dot) : null;
  }

  Future<Void> insert(SqlClient tx, Route r) {
    return tx.preparedQuery("INSERT INTO ingress_routes (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)")
        .execute(Tuple.from(new Object[] {r.id(), r.team(), r.environment(), r.position(), r.hostname(), r.pathPrefix(), r.targetNode(),
            r.targetService(), r.exposure(), r.tls(), r.ingressTag(), Sql.odt(r.createdAt()), Sql.odt(r.updatedAt())}))
        .mapEmpty();
  }

  Future<Void> update(SqlClient tx, Route r) {
    return tx.preparedQuery("UPDATE ingress_routes SET position = $2, hostname = $3, path_prefix = $4, target_node = $5, target_service = $6, "
            + "exposure = $7, tls = $8, ingress_tag = $9, updated_at = $10 WHERE id = $1")
        .execute(Tuple.from(new Object[] {r.id(), r.position(), r.hostname(), r.pathPrefix(), r.targetNode(), r.targetService(), r.exposure(),
            r.tls(), r.ingressTag(), Sql.odt(r.updatedAt())}))
        .mapEmpty();
  }

  Future<Void> delete(SqlClient tx, String id) {
    return tx.preparedQuery("DELETE FROM ingress_routes WHERE id = $1").execute(Tuple.of(id)).mapEmpty();
  }

  /** Moves the routes at positions [from, to] of a team+environment by {@code delta} (the unique key is checked at commit). */
  Future<Void> shift(SqlClient tx, String team, String env, int from, int to, int delta) {
    if (from > to) return Future.succeededFuture();
    return tx.preparedQuery("UPDATE ingress_routes SET position = position + $5 WHERE team = $1 AND environment = $2 "
            + "AND position BETWEEN $3 AND $4")
        .execute(Tuple.of(team, env, from, to, delta)).mapEmpty();
  }

  /** Every route of every team+environment and every version, in the feed's snapshot (the follower's load). */
  static Future<List<Route>> allRoutes(SqlClient snapshot) {
    return snapshot.query("SELECT " + COLUMNS + " FROM ingress_routes ORDER BY team, environment, position").execute()
        .map(rows -> Sql.list(rows, IngressRepository::map));
  }

  static Future<List<Object[]>> allVersions(SqlClient snapshot) {
    return snapshot.query("SELECT team, environment, version FROM ingress_versions").execute()
        .map(rows -> Sql.list(rows, r -> new Object[] {r.getString(0), r.getString(1), r.getLong(2)}));
  }

  /** The bound services of the nodes that have any (node id, {@code name:port}s), in the feed's snapshot. */
  static Future<List<Object[]>> allServices(SqlClient snapshot) {
    return snapshot.query("SELECT id, services FROM nodes WHERE services <> '{}'").execute()
        .map(rows -> Sql.list(rows, r -> new Object[] {r.getString(0), r.getArrayOfStrings(1)}));
  }

  static JsonArray entries(List<Route> routes) {
    JsonArray a = new JsonArray();
    for (Route r : routes) a.add(r.entry());
    return a;
  }

  private static Route map(Row r) {
    return new Route(r.getString("id"), r.getString("team"), r.getString("environment"), r.getInteger("position"), r.getString("hostname"),
        r.getString("path_prefix"), r.getString("target_node"), r.getString("target_service"), r.getString("exposure"), r.getString("tls"),
        r.getString("ingress_tag"), Sql.instant(r, "created_at"), Sql.instant(r, "updated_at"),
        r.getColumnIndex("state") >= 0 ? r.getString("state") : null);
  }
}
