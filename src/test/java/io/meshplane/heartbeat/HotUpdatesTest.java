package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The write-behind rewrites each node's row about once per heartbeat; PostgreSQL does that in place
 * (a HOT update: no new entry in any index, one WAL record) only while no index refers to a column the
 * write changes, in its key or its predicate. V7's partial index on {@code heartbeat_at IS NULL} broke
 * that for every write (0 % HOT, 6 WAL records per row) until V10.
 */
@Timeout(120)
class HotUpdatesTest {
  /** Written by the flush, but with a value that changes once per node (its first write): allowed in an index. */
  static final Set<String> CHANGES_ONCE = Set.of("heard");

  @Test
  void noIndexOfNodesRefersToAColumnTheFlushRewrites() throws Exception {
    Set<String> written = flushedColumns();
    assertTrue(written.containsAll(List.of("heartbeat_at", "endpoints", "telemetry", "acknowledged_at", "heard")), written.toString());
    try (TestCluster cluster = TestCluster.of(1)) {
      cluster.start(0);
      List<String> problems = new ArrayList<>();
      try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("""
               SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
               FROM pg_index i WHERE i.indrelid = 'nodes'::regclass""")) {
        while (rs.next()) {
          String def = rs.getString("def");
          // the definition names every key column, expression and predicate column
          String uses = def.substring(def.indexOf(" USING "));
          for (String column : written) {
            if (!CHANGES_ONCE.contains(column) && Pattern.compile("\\b" + column + "\\b").matcher(uses).find()) {
              problems.add(rs.getString("name") + " refers to " + column + ": " + def);
            }
          }
        }
      }
      assertEquals(List.of(), problems, "an index on a column the write-behind rewrites makes every row write a non-HOT update");
    }
  }

  @Test
  void aNodesLaterHeartbeatsAreWrittenAsHotUpdates() throws Exception {
    try (TestCluster cluster = TestCluster.of(1)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Meshplane app = cluster.start(0, Map.of("writebehind.flush_interval", "100ms"));
      Nodes.Enrolled n = Nodes.enroll(http, app.coordinatorPort(), cluster.admin(), "hot-1", "hot", "prod");
      beatAndAwaitWritten(http, db, app, n, 1); // the first write: heard turns true (not HOT)
      long[] before = awaitUpdates(db, 1);
      for (int i = 2; i <= 4; i++) beatAndAwaitWritten(http, db, app, n, i); // new heartbeat time, endpoints, telemetry, known
      long[] after = awaitUpdates(db, before[0] + 3);
      assertEquals(3, after[0] - before[0], "three row writes");
      assertEquals(3, after[1] - before[1], "all three were HOT updates");
    }
  }

  private static void beatAndAwaitWritten(Http http, TestDatabase db, Meshplane app, Nodes.Enrolled n, int i) throws Exception {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        Nodes.beat(i).put("known", new JsonObject().put("peers", i).put("acl", i)));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    long accepted = Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli();
    Await.until("heartbeat " + i + " written", 10_000, () -> {
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE id = '" + n.id() + "'")) {
        rs.next();
        return rs.getLong(1);
      }
    }, at -> at == accepted);
  }

  /**
   * {n_tup_upd, n_tup_hot_upd} of nodes once n_tup_upd reaches {@code updates}. A backend reports its
   * counts when it goes idle, at most once a second, and a pooled connection left idle with counts
   * not yet reported does so within 10 s (PostgreSQL 15's idle stats interval): hence 30 s.
   */
  private static long[] awaitUpdates(TestDatabase db, long updates) {
    List<Long> seen = Await.until("n_tup_upd of nodes reaches " + updates, 30_000, () -> {
      try (Connection c = db.connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'nodes'")) {
        rs.next();
        return List.of(rs.getLong(1), rs.getLong(2));
      }
    }, s -> s.get(0) >= updates);
    return new long[] {seen.get(0), seen.get(1)};
  }

  /** The columns the flush statement's SET list assigns (LiveRepository.flush), read from its source. */
  static Set<String> flushedColumns() throws Exception {
    String source = Files.readString(Path.of("src/main/java/io/meshplane/heartbeat/LiveRepository.java"));
    int start = source.indexOf("UPDATE nodes n SET heartbeat_at");
    int end = source.indexOf("FROM UNNEST", start);
    assertFalse(start < 0 || end < 0, "the flush UPDATE is not where this test looks for it");
    Set<String> columns = new TreeSet<>();
    // an assignment: a column name at the start of the SET list, of a line, or after a comma, then " = "
    Matcher m = Pattern.compile("(?:SET|,|\\n)\\s*([a-z_]+) = ").matcher(source.substring(start, end));
    while (m.find()) columns.add(m.group(1));
    return columns;
  }
}
