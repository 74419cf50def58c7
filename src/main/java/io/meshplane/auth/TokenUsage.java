package io.meshplane.auth;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code last_used_at} without a database write per request: each use only records the time in memory;
 * a periodic flush writes all tokens used since the last flush with one UPDATE ... FROM UNNEST.
 * The value in PostgreSQL is therefore at most one flush period old (and never goes backwards).
 */
final class TokenUsage {
  private static final Logger LOG = LoggerFactory.getLogger(TokenUsage.class);
  private static final String FLUSH_SQL = """
      UPDATE tokens t SET last_used_at = GREATEST(COALESCE(t.last_used_at, u.at), u.at)
      FROM (SELECT id, (timestamptz 'epoch' + ms * interval '1 millisecond') AS at FROM UNNEST($1::text[], $2::int8[]) AS x(id, ms)) u
      WHERE t.id = u.id""";

  private final ConcurrentHashMap<String, Long> pending = new ConcurrentHashMap<>();
  /** Uses being written right now: still reported by {@link #pendingUse} until the write has landed. */
  private final ConcurrentHashMap<String, Long> inFlight = new ConcurrentHashMap<>();
  private final Pool pool;

  public TokenUsage(Pool pool) {
    this.pool = pool;
  }

  /**
   * Records a use. A token used by many requests at once (one agent's or script's) would make every
   * event loop write the same map slot; within a second of the recorded use the write is skipped
   * (a read, no lock), so last_used_at is exact to a second.
   */
  public void touch(String tokenId, long nowMillis) {
    Long previous = pending.get(tokenId);
    if (previous == null || nowMillis - previous >= 1000) pending.put(tokenId, nowMillis);
  }

  /** The unflushed last use of a token on this replica, or null. */
  public Long pendingUse(String tokenId) {
    Long p = pending.get(tokenId);
    return p != null ? p : inFlight.get(tokenId);
  }

  public Future<Void> flush() {
    if (pending.isEmpty()) return Future.succeededFuture();
    List<String> ids = new ArrayList<>();
    List<Long> times = new ArrayList<>();
    for (Map.Entry<String, Long> e : pending.entrySet()) {
      // remove only the value we write: a newer use arriving meanwhile stays for the next flush
      inFlight.put(e.getKey(), e.getValue());
      if (pending.remove(e.getKey(), e.getValue())) {
        ids.add(e.getKey());
        times.add(e.getValue());
      }
    }
    if (ids.isEmpty()) return Future.succeededFuture();
    Tuple args = Tuple.tuple().addArrayOfString(ids.toArray(new String[0])).addArrayOfLong(times.toArray(new Long[0]));
    return pool.preparedQuery(FLUSH_SQL).execute(args)
        .<Void>mapEmpty()
        .onComplete(ar -> {
          for (int i = 0; i < ids.size(); i++) inFlight.remove(ids.get(i), times.get(i));
        })
        .recover(t -> {
          // put them back (unless a newer use is already there) and try again next period
          for (int i = 0; i < ids.size(); i++) pending.merge(ids.get(i), times.get(i), Math::max);
          LOG.warn("last_used_at flush of {} tokens failed, will retry: {}", ids.size(), t.getMessage());
          return Future.succeededFuture();
        });
  }
}
