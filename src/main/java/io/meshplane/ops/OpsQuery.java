package io.meshplane.ops;

import io.meshplane.access.Boundary;
import io.meshplane.common.Sql;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The fleet-wide operations list (API.md §9, {@code GET /v1/operations}) as one SQL statement whose
 * cost is one page, not the size of the scope: every shape of filter is served by an ordered range
 * scan of a V14 index that stops after {@code limit} rows.
 *
 * <ul>
 *   <li>no kind or status filter: the scope's operations newest first ({@code operations_scope_time},
 *       or {@code operations_time} for a {@code *} caller);
 *   <li>kinds and/or statuses: one branch per (kind, status) pair asked for, each an ordered scan of
 *       {@code operations_scope_kind_status_time} (or {@code operations_kind_status_time}) with its own
 *       limit, merged and cut to the page: at most 3 × 5 branches of {@code limit} rows, however few rows
 *       match (a single index scan with {@code status IN (…)} could not stop early: it reads the scope);
 *   <li>one node: its operations in order ({@code operations_node_time}), the kind and status filters
 *       applied to them.
 * </ul>
 *
 * The scope's team and environment are left out of the SQL when they are {@code *}
 * ({@link Sql#inScope(String, String, List)}) rather than compared with {@code *} at run time, so the
 * planner sees which index fits. Kinds and statuses are
 * written as literals: they come from the fixed sets {@link OpsService#KINDS} and
 * {@link OpsService#STATUSES}, checked before (never text a caller typed).
 */
final class OpsQuery {
  private static final String ORDER = " ORDER BY requested_at DESC, id DESC LIMIT ";

  /**
   * What the list is filtered by; empty sets mean any kind or status, null any node and no bound.
   *
   * @param since requested at or after (inclusive)
   * @param until requested before (exclusive)
   */
  record Filter(Set<String> kinds, Set<String> statuses, String nodeId, Instant since, Instant until) {
    Filter {
      kinds = Set.copyOf(kinds);
      statuses = Set.copyOf(statuses);
      for (String k : kinds) if (!OpsService.KINDS.contains(k)) throw new IllegalArgumentException("kind " + k);
      for (String s : statuses) if (!OpsService.STATUSES.contains(s)) throw new IllegalArgumentException("status " + s);
    }
  }

  /** The statement and its parameters. */
  record Statement(String sql, Object[] params) {}

  private OpsQuery() {}

  /** The page after ({@code afterAt}, {@code afterId}) (both null on the first page), {@code limit} rows at most. */
  static Statement page(String columns, Boundary caller, Filter f, Instant afterAt, String afterId, int limit) {
    List<Object> params = new ArrayList<>();
    StringBuilder common = new StringBuilder("TRUE").append(Sql.inScope(caller.team(), caller.environment(), params));
    if (f.nodeId() != null) common.append(" AND node_id = ").append(param(params, f.nodeId()));
    if (f.since() != null) common.append(" AND requested_at >= ").append(param(params, Sql.odt(f.since())));
    if (f.until() != null) common.append(" AND requested_at < ").append(param(params, Sql.odt(f.until())));
    if (afterAt != null) {
      common.append(" AND (requested_at, id) < (").append(param(params, Sql.odt(afterAt))).append(", ").append(param(params, afterId))
          .append(")");
    }
    String lim = param(params, limit);
    String select = "SELECT " + columns + " FROM operations WHERE " + common;
    boolean filtered = !f.kinds().isEmpty() || !f.statuses().isEmpty();
    if (!filtered) return new Statement(select + ORDER + lim, params.toArray());
    if (f.nodeId() != null) {
      StringBuilder sql = new StringBuilder(select);
      if (!f.kinds().isEmpty()) sql.append(" AND kind IN ").append(literals(f.kinds()));
      if (!f.statuses().isEmpty()) sql.append(" AND status IN ").append(literals(f.statuses()));
      return new Statement(sql + ORDER + lim, params.toArray());
    }
    List<String> branches = new ArrayList<>();
    for (String kind : sorted(f.kinds().isEmpty() ? Set.copyOf(OpsService.KINDS) : f.kinds())) {
      for (String status : sorted(f.statuses().isEmpty() ? OpsService.STATUSES : f.statuses())) {
        branches.add("(" + select + " AND kind = '" + kind + "' AND status = '" + status + "'" + ORDER + lim + ")");
      }
    }
    if (branches.size() == 1) return new Statement(branches.get(0).substring(1, branches.get(0).length() - 1), params.toArray());
    return new Statement("SELECT * FROM (" + String.join(" UNION ALL ", branches) + ") AS o" + ORDER + lim, params.toArray());
  }

  private static String param(List<Object> params, Object value) {
    params.add(value);
    return "$" + params.size();
  }

  private static List<String> sorted(Set<String> values) {
    return List.copyOf(new TreeSet<>(values));
  }

  private static String literals(Set<String> values) {
    List<String> quoted = new ArrayList<>();
    for (String v : sorted(values)) quoted.add("'" + v + "'");
    return "(" + String.join(", ", quoted) + ")";
  }
}
