package io.meshplane.common;

import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** Small conversions every repository needs: timestamps in and out, rows to records. */
public final class Sql {
  private Sql() {}

  /**
   * The one scope filter of every scoped read: rows whose {@code team} and {@code environment} lie inside
   * the caller's boundary, given as parameters {@code $teamParam} and {@code $envParam} ({@code *} = all).
   * What lies outside does not exist for the caller (404, never 403).
   */
  public static String inScope(int teamParam, int envParam) {
    return "($" + teamParam + " = '*' OR team = $" + teamParam + ") AND ($" + envParam + " = '*' OR environment = $" + envParam + ")";
  }

  /**
   * The same scope filter for a statement written at run time: {@code AND team = $n} and
   * {@code AND environment = $m} for the parts of the boundary that are not {@code *} (nothing for a
   * part that is), each value appended to {@code params}. The planner then sees which index fits
   * (a list ordered by time uses a different index for a team than for every team).
   */
  public static String inScope(String team, String environment, List<Object> params) {
    StringBuilder out = new StringBuilder();
    if (!"*".equals(team)) {
      params.add(team);
      out.append(" AND team = $").append(params.size());
    }
    if (!"*".equals(environment)) {
      params.add(environment);
      out.append(" AND environment = $").append(params.size());
    }
    return out.toString();
  }

  public static OffsetDateTime odt(Instant i) {
    return i == null ? null : i.atOffset(ZoneOffset.UTC);
  }

  public static Instant instant(Row r, String column) {
    OffsetDateTime t = r.getOffsetDateTime(column);
    return t == null ? null : t.toInstant();
  }

  public static <T> List<T> list(RowSet<Row> rows, Function<Row, T> map) {
    List<T> out = new ArrayList<>(rows.size());
    for (Row r : rows) out.add(map.apply(r));
    return out;
  }
}
