package io.meshplane.http;

import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;
import java.net.ConnectException;
import java.util.concurrent.TimeoutException;

/** Tells "the database is not there" (503, retry later) apart from a query that is wrong (500, a bug). */
public final class DatabaseFailures {
  private DatabaseFailures() {}

  /** PostgreSQL cancelled the statement (SQLSTATE 57014): a read ran past postgres.read_timeout. */
  public static boolean isStatementTimeout(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg) return "57014".equals(pg.getSqlState());
    }
    return false;
  }

  /**
   * PostgreSQL ended the transaction to resolve a conflict with another one (SQLSTATE 40P01 deadlock,
   * 40001 serialization failure): nothing was written, and the same request may succeed at once.
   */
  public static boolean isTransientConflict(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg) return "40P01".equals(pg.getSqlState()) || "40001".equals(pg.getSqlState());
    }
    return false;
  }

  public static boolean isUnavailable(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof PgException pg) {
        String state = pg.getSqlState();
        // 08 connection exception, 57P admin shutdown / cannot connect now, 53 insufficient resources
        return state != null && (state.startsWith("08") || state.startsWith("57P") || state.startsWith("53"));
      }
      if (c instanceof ConnectException || c instanceof ClosedConnectionException || c instanceof TimeoutException
          || c instanceof io.netty.channel.ConnectTimeoutException) {
        return true;
      }
      String msg = c.getMessage();
      if (msg != null && (msg.contains("Connection refused") || msg.contains("Timeout") || msg.contains("Connection reset")
          || msg.contains("connection was closed") || msg.contains("Pool closed"))) {
        return true;
      }
      if (c.getCause() == c) break;
    }
    return false;
  }
}
