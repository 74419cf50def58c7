package io.meshplane.node;

import io.meshplane.access.Boundary;
import io.meshplane.common.Sql;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The SQL of one inventory list (API.md §8): the scope, then only the filters given, so each statement
 * PostgreSQL plans names exactly the columns it can use an index for (V15): the scope and name for the
 * name orders, the address range, the scope and id for the default order. Values are parameters;
 * the text is built from constants only.
 */
final class NodeListing {
  /** Counts are exact up to here; beyond, the planner's estimate (API.md §8, "total"). */
  static final int COUNT_CAP = 10_000;

  record Statement(String sql, Tuple params) {}

  private final StringBuilder where = new StringBuilder();
  private final List<Object> params = new ArrayList<>();

  /**
   * @param scope the caller's boundary narrowed by the team and environment filters
   * @param ids null, or the only ids that may match (the drifting nodes)
   */
  NodeListing(Boundary scope, NodeFilter f, Instant staleCutoff, String[] ids) {
    params.add(scope.team());
    params.add(scope.environment());
    where.append(Sql.inScope(1, 2));
    if (f.tag() != null) where.append(" AND ").append(param(f.tag())).append(" = ANY (tags)");
    if (f.namePrefix() != null) where.append(" AND starts_with(name, ").append(param(f.namePrefix())).append(")");
    if (f.agentVersion() != null) where.append(" AND telemetry->>'agent_version' = ").append(param(f.agentVersion()));
    if (f.status() != null) {
      switch (f.status()) {
        case "pending" -> where.append(" AND heartbeat_at IS NULL");
        case "online" -> where.append(" AND heartbeat_at >= ").append(param(Sql.odt(staleCutoff)));
        default -> where.append(" AND heartbeat_at < ").append(param(Sql.odt(staleCutoff)));
      }
    }
    if (f.address() != null) {
      String[] range = NodeFilter.range(f.address());
      where.append(" AND address BETWEEN ").append(param(range[0])).append("::text::inet AND ").append(param(range[1])).append("::text::inet");
    }
    if (ids != null) where.append(" AND id = ANY (").append(param(ids)).append("::text[])");
  }

  private String param(Object v) {
    params.add(v);
    return "$" + params.size();
  }

  /** A page in {@code sort} order after {@code after} (the cursor's key parts; null = from the start), {@code fetch} rows. */
  Statement page(String columns, NodeSort sort, List<String> after, int fetch) {
    NodeListing q = copy();
    StringBuilder sql = new StringBuilder("SELECT ").append(columns).append(" FROM nodes WHERE ").append(q.where);
    if (after != null) {
      String cmp = sort.descending ? " < " : " > ";
      if (sort == NodeSort.ID) {
        sql.append(" AND id").append(cmp).append(q.param(after.get(0)));
      } else {
        String key = q.param(after.get(0)) + (sort.byHeartbeat() ? "::text::timestamptz" : "");
        sql.append(" AND (").append(sort.key).append(", id)").append(cmp).append("(").append(key).append(", ").append(q.param(after.get(1)))
            .append(")");
      }
    }
    sql.append(" ORDER BY ").append(sort.orderBy()).append(" LIMIT ").append(q.param(fetch));
    return new Statement(sql.toString(), Tuple.from(q.params));
  }

  /** How many rows match, counting at most {@link #COUNT_CAP} + 1. */
  Statement cappedCount() {
    NodeListing q = copy();
    String sql = "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE " + q.where + " LIMIT " + q.param(COUNT_CAP + 1) + ") c";
    return new Statement(sql, Tuple.from(q.params));
  }

  /** The planner's estimate of the matching rows (planning only: no row is read). */
  Statement estimate() {
    return new Statement("EXPLAIN (FORMAT JSON) SELECT 1 FROM nodes WHERE " + where, Tuple.from(params));
  }

  private NodeListing copy() {
    NodeListing c = new NodeListing();
    c.where.append(where);
    c.params.addAll(params);
    return c;
  }

  private NodeListing() {}
}
