package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The inventory list at work (API.md §8): every order pages completely (no repeat, no gap, the order
 * PostgreSQL's ORDER BY gives), the team and environment filters and the scope, the address search,
 * the total (exact, then estimated past the cap), and hostile values refused naming the field.
 * Nodes are written straight into the table (as the write-behind would leave them): the list reads
 * PostgreSQL, so heartbeat times, ties and never-heard nodes can be laid out exactly.
 */
@Timeout(180)
class InventoryApiTest {
  static final List<String> SORTS = List.of("id", "name", "-name", "heartbeat", "-heartbeat", "status", "-status");
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane app;
  static Http http;
  static String root;
  static String alpha;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.started(1, Map.of("heartbeat.stale_after", "2s"));
    db = cluster.db();
    app = cluster.replica(0);
    http = cluster.http();
    root = cluster.admin();
    alpha = Tokens.issue(app, "alpha", "*", Surface.OPERATOR).jwt();
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      // 45 nodes in alpha (two environments), 20 in beta; names repeat across scopes (ties on name in a wide
      // list), heartbeats repeat (ties on the heartbeat), every 7th never heard from, every 5th stale
      st.execute("""
          INSERT INTO nodes (id, name, team, environment, address, public_key, tags, created_at, updated_at, heartbeat_at, heard)
          SELECT 'nd_' || lpad(i::text, 26, '0'), 'n-' || (i % 23), CASE WHEN i <= 45 THEN 'alpha' ELSE 'beta' END,
                 CASE WHEN i % 2 = 0 THEN 'prod' ELSE 'dev' END, '100.99.0.0'::inet + i, md5(i::text) || 'k', ARRAY['tag:t' || (i % 3)],
                 now(), now(),
                 CASE WHEN i % 7 = 0 THEN NULL WHEN i % 5 = 0 THEN now() - interval '1 hour'
                      ELSE date_trunc('second', now()) + interval '1 day' - ((i % 4) || ' seconds')::interval END,
                 i % 7 <> 0
          FROM generate_series(1, 65) i""");
      st.execute("ANALYZE nodes");
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static HttpResponse<Buffer> list(String token, String query) {
    return http.get(app.coordinatorPort(), "/v1/nodes" + (query.isEmpty() ? "" : "?" + query), token);
  }

  static JsonObject ok(String token, String query) {
    HttpResponse<Buffer> r = list(token, query);
    assertEquals(200, r.statusCode(), query + " -> " + r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** Every page of a list, following next_cursor; the items in order. */
  static List<JsonObject> all(String token, String query, int limit) {
    List<JsonObject> out = new ArrayList<>();
    String cursor = null;
    for (int pages = 0; pages < 200; pages++) {
      JsonObject page = ok(token, query + (query.isEmpty() ? "" : "&") + "limit=" + limit + (cursor == null ? "" : "&cursor=" + enc(cursor)));
      page.getJsonArray("items").forEach(o -> out.add((JsonObject) o));
      cursor = page.getString("next_cursor");
      if (cursor == null) return out;
    }
    throw new AssertionError("more than 200 pages");
  }

  /** The ids of the test's rows as PostgreSQL orders them (the truth the keyset must agree with). */
  static List<String> expected(String where, String orderBy) throws Exception {
    List<String> ids = new ArrayList<>();
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT id FROM nodes WHERE " + where + " ORDER BY " + orderBy)) {
      while (rs.next()) ids.add(rs.getString(1));
    }
    return ids;
  }

  static String orderBy(String sort) {
    boolean desc = sort.startsWith("-");
    String key = sort.replace("-", "");
    String dir = desc ? " DESC" : "";
    return switch (key) {
      case "id" -> "id" + dir;
      case "name" -> "name" + dir + ", id" + dir;
      default -> "COALESCE(heartbeat_at, '-infinity')" + dir + ", id" + dir;
    };
  }

  static List<String> ids(List<JsonObject> items) {
    return items.stream().map(o -> o.getString("id")).toList();
  }

  @Test
  void everyOrderPagesCompletelyWithoutRepeatsOrGaps() throws Exception {
    for (String sort : SORTS) {
      String q = sort.equals("id") ? "" : "sort=" + enc(sort);
      List<String> wide = ids(all(root, q, 7));
      assertEquals(new HashSet<>(wide).size(), wide.size(), sort + ": a node repeats");
      assertEquals(expected("true", orderBy(sort)), wide, sort + " (every team)");
      List<String> scoped = ids(all(alpha, q, 6));
      assertEquals(expected("team = 'alpha'", orderBy(sort)), scoped, sort + " (team alpha)");
      List<String> prod = ids(all(alpha, q + (q.isEmpty() ? "" : "&") + "environment=prod", 5));
      assertEquals(expected("team = 'alpha' AND environment = 'prod'", orderBy(sort)), prod, sort + " (alpha/prod)");
    }
  }

  @Test
  void statusOrderIsPendingThenStaleThenOnline() {
    // past the cold-start grace (stale_after after the cluster's start), an hour-old heartbeat is stale
    io.meshplane.testing.Await.until("an hour-old heartbeat shows stale", () -> ok(root, "address=100.99.0.5").getJsonArray("items")
        .getJsonObject(0).getString("status").equals("stale"));
    List<String> seen = all(root, "sort=status", 9).stream().map(o -> o.getString("status")).toList();
    List<String> rank = List.of("pending", "stale", "online");
    for (int i = 1; i < seen.size(); i++) {
      assertTrue(rank.indexOf(seen.get(i - 1)) <= rank.indexOf(seen.get(i)), "status order broken at " + i + ": " + seen);
    }
    assertEquals(Set.copyOf(rank), Set.copyOf(seen));
    List<String> reversed = all(root, "sort=-status", 9).stream().map(o -> o.getString("status")).toList();
    assertEquals("online", reversed.get(0));
    assertEquals("pending", reversed.get(reversed.size() - 1));
  }

  @Test
  void aCursorBelongsToItsOrder() {
    String cursor = ok(root, "sort=name&limit=2").getString("next_cursor");
    HttpResponse<Buffer> r = list(root, "sort=heartbeat&limit=2&cursor=" + enc(cursor));
    assertEquals(400, r.statusCode(), r.bodyAsString());
    assertEquals("cursor", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
  }

  @Test
  void teamAndEnvironmentFiltersNarrowTheScopeAndNeverWidenIt() throws Exception {
    JsonObject beta = ok(root, "team=beta&limit=100");
    assertEquals(expected("team = 'beta'", "id"), ids(beta.getJsonArray("items").stream().map(o -> (JsonObject) o).toList()));
    assertEquals(20, beta.getLong("total"));
    assertEquals(false, beta.getBoolean("total_estimated"));
    assertEquals(expected("environment = 'dev'", "id").size(), ok(root, "environment=dev").getLong("total"));
    // a narrower caller asking outside its scope: nothing exists there for it (an empty page, as a 404 elsewhere)
    JsonObject outside = ok(alpha, "team=beta");
    assertEquals(0, outside.getJsonArray("items").size());
    assertEquals(0, outside.getLong("total"));
    assertNull(outside.getString("next_cursor"));
    assertEquals(45, ok(alpha, "team=alpha").getLong("total"));
    assertEquals(45, ok(alpha, "").getLong("total"));
    assertEquals(65, ok(root, "").getLong("total"));
    assertEquals(expected("team = 'alpha' AND heartbeat_at IS NULL", "id").size(), ok(alpha, "status=pending").getLong("total"));
  }

  @Test
  void searchByAddressOrPrefix() throws Exception {
    JsonObject one = ok(root, "address=100.99.0.7");
    assertEquals(List.of("nd_" + "0".repeat(25) + "7"), ids(one.getJsonArray("items").stream().map(o -> (JsonObject) o).toList()));
    assertEquals("100.99.0.7/32", one.getJsonArray("items").getJsonObject(0).getString("address"));
    assertEquals(1, one.getLong("total"));
    for (String prefix : List.of("100.99.0.0/28", "100.99.0.32/27", "100.99.0.0/16", "100.98.0.0/16", "0.0.0.0/0", "100.99.0.64/30")) {
      List<String> got = ids(all(root, "address=" + enc(prefix), 4));
      assertEquals(expected("address <<= '" + prefix + "'::inet", "id"), got, prefix);
    }
    // the scope still applies
    assertEquals(expected("team = 'alpha' AND address <<= '100.99.0.32/27'", "name, id"), ids(all(alpha, "sort=name&address=100.99.0.32%2F27", 3)));
    assertEquals(0, ok(alpha, "address=100.99.0.50").getLong("total")); // beta's node: not in alpha's scope
  }

  @Test
  void hostileValuesAreRefusedNamingTheField() {
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("address=100.99.0.1%2F24", "address"); // host bits set
    bad.put("address=100.99.0.0%2F33", "address");
    bad.put("address=100.99.0.0%2F", "address");
    bad.put("address=100.99.0.07", "address");
    bad.put("address=example.net", "address");
    bad.put("address=%3A%3A1", "address");
    bad.put("address=100.99.0.0%2F24%2F1", "address");
    bad.put("address=" + "1".repeat(300), "address");
    bad.put("sort=size", "sort");
    bad.put("sort=--name", "sort");
    bad.put("sort=Name", "sort");
    bad.put("team=Alpha", "team");
    bad.put("team=a%27%20OR%201%3D1", "team");
    bad.put("environment=*", "environment");
    bad.put("policy_sync=drift", "policy_sync");
    bad.put("status=dead", "status");
    bad.put("sorted=name", "sorted");
    for (Map.Entry<String, String> e : bad.entrySet()) {
      HttpResponse<Buffer> r = list(root, e.getKey());
      assertEquals(400, r.statusCode(), e.getKey() + " -> " + r.bodyAsString());
      JsonArray errors = r.bodyAsJsonObject().getJsonArray("errors");
      assertEquals(e.getValue(), errors.getJsonObject(0).getString("field"), e.getKey());
    }
  }

  @Test
  void policySyncFilters() {
    // no node of these rows ever acknowledged a version: all behind, none current, none drifting
    List<JsonObject> behind = all(root, "policy_sync=behind", 10);
    assertEquals(65, behind.size());
    behind.forEach(n -> assertEquals("behind", n.getJsonObject("policy_sync").getString("state")));
    JsonObject current = ok(root, "policy_sync=current");
    assertEquals(0, current.getJsonArray("items").size());
    assertTrue(current.getValue("total") == null, current.encode());
    JsonObject drifting = ok(root, "policy_sync=drifting");
    assertEquals(0, drifting.getJsonArray("items").size());
    assertEquals(0, drifting.getLong("total"));
    // two nodes claimed as drifting (as DriftWatch claims them, on the cluster map): the filter finds
    // exactly those, with the scope and the other filters still applied
    String a = "nd_" + "0".repeat(24) + "12"; // alpha
    String b = "nd_" + "0".repeat(24) + "50"; // beta
    com.hazelcast.map.IMap<String, Long> claims = app.hazelcast().getMap("meshplane.policy.drift");
    claims.put(a, 9L);
    claims.put(b, 9L);
    try {
      io.meshplane.testing.Await.until("both claims seen", () -> ok(root, "policy_sync=drifting").getLong("total") == 2);
      assertEquals(List.of(a, b), ids(all(root, "policy_sync=drifting&sort=heartbeat", 1)).stream().sorted().toList());
      assertEquals(List.of(a), ids(all(alpha, "policy_sync=drifting", 5)));
      assertEquals(List.of(b), ids(all(root, "policy_sync=drifting&team=beta", 5)));
    } finally {
      claims.remove(a);
      claims.remove(b);
    }
  }

  @Test
  void theTotalIsExactUpToTheCapThenAnEstimate() throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("""
          INSERT INTO nodes (id, name, team, environment, address, public_key, created_at, updated_at)
          SELECT 'nd_h' || lpad(i::text, 25, '0'), 'h-' || i, 'huge', 'prod', '100.100.0.0'::inet + i, md5('h' || i) || 'h', now(), now()
          FROM generate_series(1, 10050) i""");
      st.execute("ANALYZE nodes");
      try {
        JsonObject huge = ok(root, "team=huge&limit=5");
        assertTrue(huge.getBoolean("total_estimated"), huge.encode());
        assertTrue(huge.getLong("total") > 10_000 && huge.getLong("total") < 20_000, huge.encode());
        JsonObject few = ok(root, "team=huge&name_prefix=h-100");
        assertFalse(few.getBoolean("total_estimated"));
        assertEquals(1 + 10 + 51, few.getLong("total")); // h-100, h-1000..h-1009, h-10000..h-10050
      } finally {
        st.execute("DELETE FROM nodes WHERE team = 'huge'");
      }
    }
  }
}
