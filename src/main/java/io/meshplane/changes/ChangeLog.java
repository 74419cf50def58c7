package io.meshplane.changes;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.util.List;

/**
 * The ordered log of changes that shape heartbeat answers and operations ({@code mesh_changes} and the
 * mesh clock, V6): enrollments, deletions, re-tags, relay moves, policy versions, operations' work,
 * and the live changes the write-behind and the staleness scans find. This package owns both tables:
 * whoever makes such a change appends it here, in the change's own transaction, then announces it
 * ({@link Feed#announce}); every replica's {@link ChangeFeed} applies the log in {@code seq} order to
 * its followers (the peer model, the operations board). Appending first takes the clock row's lock,
 * so the writers are serialised and {@code seq} order is commit order: a reader that sees entry n has
 * every entry before it. Entries carry the values they set, never "read the row": applying the log up
 * to n gives the same state on every replica.
 *
 * <p>The live kinds are appended inside the heartbeat feature's own statements (one statement per
 * flush and per scan, where the values are at hand), with {@link #CLOCK_CTE} and {@link #INSERT_ENTRY}.
 */
public final class ChangeLog {
  /**
   * One entry: {@code kind} is enroll, delete, retag, relay, policy, live, online or work;
   * {@code atMillis} when it was written (its transaction's time; 0 when not read from the log).
   */
  public record Entry(long seq, String kind, JsonObject data, long atMillis) {
    public Entry(long seq, String kind, JsonObject data) {
      this(seq, kind, data, 0);
    }
  }

  /**
   * A feature that keeps derived state from the log (the peer model, the operations board): it sees
   * every entry in seq order (and ignores the kinds it does not use), and loads its state from one
   * consistent snapshot when the replica starts or has fallen too far behind. Called on the feed's one
   * worker thread, never concurrently.
   */
  public interface Follower {
    /** Applies one entry; true when this follower uses the entry's kind. */
    boolean apply(Entry entry);

    /** Replaces the follower's state with what {@code snapshot} (a REPEATABLE READ transaction at clock {@code seq}) holds. */
    Future<Void> load(SqlClient snapshot, long seq);
  }

  /** This replica's reader of the log (the changes module): follow it, announce what you appended, wait for read-your-writes. */
  public interface Feed {
    /** Adds a follower; before the replica loads (at construction). */
    void follow(Follower follower);

    /** Tells every replica's feed to read the log now (something was just appended and committed). */
    void announce();

    /** Completes when this replica has applied entry {@code seq} (bounded wait: it completes anyway after 2 s). */
    Future<Void> applied(long seq);

    /** The last seq this replica has applied: every entry up to it is in every follower. */
    long position();
  }

  /**
   * A CTE that bumps the clock only when the CTE {@code %s} (the statement's own row changes that go
   * into the entry) returned a row, for statements that append an entry to the log alongside their own
   * write: {@code clock AS (...)} yields {@code seq}.
   *
   * <p>It counts the rows rather than asking whether one exists, on purpose: {@code EXISTS} stops at the
   * first row, so PostgreSQL would take the clock's lock after the statement's first row lock and then
   * go on locking rows, and two such statements (a flush and a staleness record) could each hold what
   * the other waits for (seen as deadlocks under load). Counting makes the statement lock every row
   * first and the clock last: the order every writer of the log follows (rows, then the clock at the
   * end of the transaction), so no cycle can form through the clock.
   */
  public static final String CLOCK_CTE = "clock AS (UPDATE mesh_clock SET seq = seq + 1 WHERE (SELECT count(*) FROM %s) > 0 RETURNING seq)";

  /** With {@link #CLOCK_CTE}: {@code INSERT_ENTRY + "SELECT clock.seq, 'live', <data> FROM clock"}. */
  public static final String INSERT_ENTRY = "INSERT INTO mesh_changes (seq, kind, data) ";

  private final Pool pool;

  public ChangeLog(Pool pool) {
    this.pool = pool;
  }

  /** Appends one entry in {@code tx} (the change's transaction); completes with its seq. */
  public static Future<Long> append(SqlClient tx, String kind, JsonObject data) {
    return tx.preparedQuery("WITH clock AS (UPDATE mesh_clock SET seq = seq + 1 RETURNING seq) " + INSERT_ENTRY
            + "SELECT seq, $1, $2 FROM clock RETURNING seq")
        .execute(Tuple.of(kind, data))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** Entries after {@code afterSeq}, in order, at most {@code limit}. */
  public Future<List<Entry>> after(long afterSeq, int limit) {
    return pool.preparedQuery("SELECT seq, kind, data, (extract(epoch FROM at) * 1000)::bigint AS at_ms FROM mesh_changes "
            + "WHERE seq > $1 ORDER BY seq LIMIT $2")
        .execute(Tuple.of(afterSeq, limit))
        .map(rows -> Sql.list(rows, r -> new Entry(r.getLong("seq"), r.getString("kind"), (JsonObject) r.getJson("data"), r.getLong("at_ms"))));
  }

  /**
   * The inventory changes (enroll, delete, retag) after {@code afterSeq}, in {@code client}'s view, at
   * most {@code limit}: what a policy update checks, under the clock's lock, against the inventory its
   * tests ran on.
   */
  public static Future<List<Entry>> inventoryChangesAfter(SqlClient client, long afterSeq, int limit) {
    return client.preparedQuery("SELECT seq, kind, data FROM mesh_changes WHERE seq > $1 AND kind IN ('enroll', 'delete', 'retag') "
            + "ORDER BY seq LIMIT $2")
        .execute(Tuple.of(afterSeq, limit))
        .map(rows -> Sql.list(rows, r -> new Entry(r.getLong("seq"), r.getString("kind"), (JsonObject) r.getJson("data"))));
  }

  /** Drops entries older than {@code keepSeconds} (replicas further behind load a snapshot instead). */
  public Future<Integer> trim(long keepSeconds) {
    return pool.preparedQuery("DELETE FROM mesh_changes WHERE at < now() - $1 * interval '1 second'")
        .execute(Tuple.of(keepSeconds)).map(rows -> rows.rowCount());
  }

  /** The clock as {@code client} sees it: in a REPEATABLE READ snapshot, the seq that snapshot is consistent with. */
  public static Future<Long> clock(SqlClient client) {
    return client.query("SELECT seq FROM mesh_clock").execute().map(rows -> rows.iterator().next().getLong(0));
  }

  /** Takes the clock's row lock in {@code tx}: every other writer of the log waits until {@code tx} ends. */
  public static Future<Void> lock(SqlClient tx) {
    return tx.query("SELECT seq FROM mesh_clock FOR UPDATE").execute().mapEmpty();
  }
}
