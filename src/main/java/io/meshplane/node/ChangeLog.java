package io.meshplane.node;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.util.List;

/**
 * The ordered log of changes that shape heartbeat answers ({@code mesh_changes}, V6): enrollments,
 * deletions, re-tags, policy versions, and the live changes the write-behind and the staleness scans
 * find. Whoever makes such a change appends it in the change's own transaction; every replica's peer
 * model tails the log in {@code seq} order. Appending first takes the clock row's lock, so the
 * writers are serialised and {@code seq} order is commit order: a reader that sees entry n has every
 * entry before it (see V6). Entries carry the values they set, never "read the row": applying the log
 * up to n gives the same state on every replica.
 *
 * <p>The live kinds are appended inside the heartbeat feature's own statements (one statement per
 * flush and per scan, where the values are at hand), with {@link #CLOCK_CTE}.
 */
public final class ChangeLog {
  /** One entry: {@code kind} is enroll, delete, retag, relay, policy, live, online or work. */
  public record Entry(long seq, String kind, JsonObject data) {}

  /**
   * A feature that keeps derived state from the log besides the peer model (the operations board):
   * it sees every entry in seq order (and ignores the kinds it does not use), and loads its state from
   * the same consistent snapshot as the model when the replica starts or has fallen too far behind.
   * Called on the feed's one worker thread, never concurrently.
   */
  public interface Follower {
    /** Applies one entry; true when this follower uses the entry's kind. */
    boolean apply(Entry entry);

    /** Replaces the follower's state with what {@code snapshot} (a REPEATABLE READ transaction at clock {@code seq}) holds. */
    Future<Void> load(SqlClient snapshot, long seq);
  }

  /**
   * This replica's reader of the log (run by the policy feature, whose peer model is its first reader):
   * other features follow it, announce what they appended, and wait for read-your-writes.
   */
  public interface Feed {
    /** Adds a follower; before the replica loads (at construction). */
    void follow(Follower follower);

    /** Tells every replica's feed to read the log now (something was just appended). */
    void announce();

    /** Completes when this replica has applied entry {@code seq} (bounded wait: it completes anyway after 2 s). */
    Future<Void> applied(long seq);
  }

  /** What a node is when the peer model loads it from a snapshot (the same fields as an {@code enroll} entry, plus live ones). */
  public record NodeFacts(String id, String team, String environment, String name, int address, String key, String[] tags, String relay,
      String[] endpoints, boolean online) {}

  /**
   * A CTE that bumps the clock only when {@code condition} (an SQL boolean) holds, for statements that
   * append an entry to the log alongside their own write: {@code clock AS (...)} yields {@code seq}.
   */
  public static final String CLOCK_CTE = "clock AS (UPDATE mesh_clock SET seq = seq + 1 WHERE %s RETURNING seq)";

  private final Pool pool;

  public ChangeLog(Pool pool) {
    this.pool = pool;
  }

  /** Appends one entry in {@code tx} (the change's transaction); completes with its seq. */
  public static Future<Long> append(SqlClient tx, String kind, JsonObject data) {
    return tx.preparedQuery("""
            WITH clock AS (UPDATE mesh_clock SET seq = seq + 1 RETURNING seq)
            INSERT INTO mesh_changes (seq, kind, data) SELECT seq, $1, $2 FROM clock RETURNING seq""")
        .execute(Tuple.of(kind, data))
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** Entries after {@code afterSeq}, in order, at most {@code limit}. */
  public Future<List<Entry>> after(long afterSeq, int limit) {
    return pool.preparedQuery("SELECT seq, kind, data FROM mesh_changes WHERE seq > $1 ORDER BY seq LIMIT $2")
        .execute(Tuple.of(afterSeq, limit))
        .map(rows -> Sql.list(rows, r -> new Entry(r.getLong("seq"), r.getString("kind"), (JsonObject) r.getJson("data"))));
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

  /**
   * Every node as the log would have made it, read in the caller's snapshot (together with
   * {@link #clock}): the record fields of an enroll entry, the effective key (the last one reported,
   * else the enrolled one), endpoints, and online (has beaten, not stale).
   */
  public static Future<List<NodeFacts>> nodes(SqlClient client) {
    return client.query(FACTS + " ORDER BY id").execute().map(rows -> Sql.list(rows, ChangeLog::facts));
  }

  /** The nodes of one team+environment as they are now (policy tests and previews run against them). */
  public Future<List<NodeFacts>> nodesOf(String team, String env) {
    return nodesOf(pool, team, env);
  }

  /** As {@link #nodesOf(String, String)}, in the caller's transaction (after it took the clock's lock: every earlier change is in). */
  public Future<List<NodeFacts>> nodesOf(io.vertx.sqlclient.SqlClient client, String team, String env) {
    return client.preparedQuery(FACTS + " WHERE team = $1 AND environment = $2 ORDER BY id").execute(Tuple.of(team, env))
        .map(rows -> Sql.list(rows, ChangeLog::facts));
  }

  private static final String FACTS = """
      SELECT id, team, environment, name, (address - '0.0.0.0'::inet) AS address, COALESCE(NULLIF(reported_key, ''), public_key) AS key,
             tags, relay, endpoints, (heartbeat_at IS NOT NULL AND NOT stale) AS online
      FROM nodes""";

  private static NodeFacts facts(Row r) {
    return new NodeFacts(r.getString("id"), r.getString("team"), r.getString("environment"), r.getString("name"),
        (int) r.getLong("address").longValue(), r.getString("key"), r.getArrayOfStrings("tags"), r.getString("relay"),
        r.getArrayOfStrings("endpoints"), r.getBoolean("online"));
  }

  /** The data of an {@code enroll} entry. */
  public static JsonObject enrolled(String id, String team, String env, String name, String address, String key, String[] tags,
      String relay) {
    return new JsonObject().put("id", id).put("team", team).put("environment", env).put("name", name).put("address", address)
        .put("key", key).put("tags", new JsonArray(List.of(tags))).put("relay", relay);
  }
}
