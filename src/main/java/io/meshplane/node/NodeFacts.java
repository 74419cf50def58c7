package io.meshplane.node;

import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import java.util.List;

/**
 * What a node is to the peer model: the fields of an {@code enroll} entry of the change log (which
 * this feature writes), plus the live ones a snapshot reads (the effective key, endpoints, online).
 */
public record NodeFacts(String id, String team, String environment, String name, int address, String key, String[] tags, String relay,
    String[] endpoints, boolean online) {

  private static final String FACTS = """
      SELECT id, team, environment, name, (address - '0.0.0.0'::inet) AS address, current_key AS key,
             tags, relay, endpoints, (heartbeat_at IS NOT NULL AND NOT stale) AS online
      FROM nodes""";

  /**
   * Every node as the log would have made it, read in the caller's snapshot (a REPEATABLE READ
   * transaction, with the clock): the record fields of an enroll entry, the effective key (the last one
   * reported, else the enrolled one), endpoints, and online (has beaten, not stale).
   */
  public static Future<List<NodeFacts>> all(SqlClient snapshot) {
    return snapshot.query(FACTS + " ORDER BY id").execute().map(rows -> Sql.list(rows, NodeFacts::of));
  }

  private static NodeFacts of(Row r) {
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
