package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code GET /v1/operations} (and {@code /api/v1/operations}) over real HTTP and PostgreSQL: the
 * scope's operations newest first, every filter against a model of the rows written, pages that
 * neither repeat nor skip (also while operations are added), the caller's scope (a team's token sees
 * nothing of another team), a 400 naming each bad parameter, the panel's mirror with a session, and a
 * real operation moving from open to succeeded in the list.
 */
@Timeout(180)
class OperationsListTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static final Instant BASE = Instant.now().truncatedTo(ChronoUnit.SECONDS).minus(1, ChronoUnit.HOURS);
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;
  /** The rows written straight into the table, as the test's model of them. */
  static final List<Row> ROWS = new ArrayList<>();

  record Row(String id, String nodeId, String team, String environment, String kind, String status, Instant requestedAt) {}

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.started(1, Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms"));
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    // 130 operations of bulk/prod over 7 nodes, two at each second (the id breaks the tie), a few of
    // other scopes; open ones at most one per node and kind, as the table allows
    List<String> kinds = List.of("rekey", "move_relay", "drain_ingress");
    List<String> closed = List.of("succeeded", "failed", "expired");
    for (int i = 0; i < 130; i++) {
      String status = i < 14 ? (i % 2 == 0 ? "pending" : "delivered") : closed.get((i / 3) % 3);
      ROWS.add(new Row(opId(i), nodeId(i % 7), "bulk", "prod", kinds.get(i % 3), status, BASE.minusSeconds(i / 2)));
    }
    for (int i = 0; i < 12; i++) {
      ROWS.add(new Row(opId(500 + i), nodeId(100 + i), "rival", "prod", kinds.get(i % 3), "failed", BASE.minusSeconds(i)));
      ROWS.add(new Row(opId(600 + i), nodeId(200 + i), "bulk", "staging", kinds.get(i % 3), "succeeded", BASE.minusSeconds(i)));
    }
    try (Connection c = cluster.db().connect(); PreparedStatement st = c.prepareStatement("INSERT INTO operations (id, node_id, team, "
        + "environment, kind, status, target, actor_type, actor_id, actor_name, requested_at, deadline) "
        + "VALUES (?, ?, ?, ?, ?, ?, '{\"name\":\"web\"}', 'token', 'tok_x', 'root', ?, ?)")) {
      for (Row r : ROWS) {
        st.setString(1, r.id());
        st.setString(2, r.nodeId());
        st.setString(3, r.team());
        st.setString(4, r.environment());
        st.setString(5, r.kind());
        st.setString(6, r.status());
        st.setTimestamp(7, Timestamp.from(r.requestedAt()));
        // far ahead: the expiry sweep leaves these open ones alone
        st.setTimestamp(8, Timestamp.from(r.requestedAt().plus(3650, ChronoUnit.DAYS)));
        st.addBatch();
      }
      st.executeBatch();
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String opId(int i) {
    return "op_" + "0".repeat(26 - Integer.toString(i).length()) + i;
  }

  static String nodeId(int i) {
    return "nd_" + "0".repeat(26 - Integer.toString(i).length()) + i;
  }

  /** The model's ids inside team/environment matching {@code p}, newest first (requested_at, then id, descending). */
  static List<String> expected(String team, String environment, Predicate<Row> p) {
    return ROWS.stream().filter(r -> r.team().equals(team) && r.environment().equals(environment)).filter(p)
        .sorted(Comparator.comparing(Row::requestedAt).thenComparing(Row::id).reversed()).map(Row::id).toList();
  }

  static HttpResponse<Buffer> get(String bearer, String query) {
    return http.get(app.coordinatorPort(), "/v1/operations" + (query.isEmpty() ? "" : "?" + query), bearer);
  }

  /** Every page of the list with {@code query}, {@code limit} per page: the ids in the order listed. */
  static List<String> all(String bearer, String query, int limit) {
    return all(bearer, query, limit, null);
  }

  /** The pages from {@code cursor} on (the first page when null). */
  static List<String> all(String bearer, String query, int limit, String cursor) {
    List<String> ids = new ArrayList<>();
    int pages = 0;
    do {
      String q = (query.isEmpty() ? "" : query + "&") + "limit=" + limit + (cursor == null ? "" : "&cursor=" + cursor);
      HttpResponse<Buffer> r = get(bearer, q);
      assertEquals(200, r.statusCode(), q + " -> " + r.bodyAsString());
      JsonObject page = r.bodyAsJsonObject();
      JsonArray items = page.getJsonArray("items");
      assertTrue(items.size() <= limit, page.encode());
      for (Object o : items) ids.add(((JsonObject) o).getString("id"));
      cursor = page.getString("next_cursor");
      if (cursor != null) assertEquals(limit, items.size(), "a page before the last one is full");
      assertTrue(++pages < 1000, "the pages end");
    } while (cursor != null);
    return ids;
  }

  static String bulkScope() {
    return Tokens.issue(app, "bulk", "prod", Surface.MONITORING).jwt();
  }

  @Test
  void theScopeNewestFirstInPagesThatNeitherRepeatNorSkip() {
    String bulk = bulkScope();
    List<String> want = expected("bulk", "prod", r -> true);
    for (int limit : List.of(1, 7, 50, 1000)) {
      List<String> got = all(bulk, "", limit);
      assertEquals(want, got, "limit " + limit);
      assertEquals(got.size(), new HashSet<>(got).size(), "no repeats");
    }
    // the default page holds 50; each item is the operation record as GET /operations/{id} answers it
    JsonObject first = get(bulk, "").bodyAsJsonObject();
    assertEquals(50, first.getJsonArray("items").size());
    assertNotNull(first.getString("next_cursor"));
    JsonObject item = first.getJsonArray("items").getJsonObject(0);
    assertEquals(want.get(0), item.getString("id"));
    assertEquals(http.get(app.coordinatorPort(), "/v1/operations/" + item.getString("id"), bulk).bodyAsJsonObject(), item);

    // an operation added between two pages is not on the later pages, and nothing shifts
    JsonObject p1 = get(bulk, "limit=20").bodyAsJsonObject();
    insert(new Row(opId(900), nodeId(3), "bulk", "prod", "rekey", "succeeded", BASE.plusSeconds(5)));
    List<String> rest = all(bulk, "", 20, p1.getString("next_cursor"));
    assertEquals(want.subList(20, want.size()), rest);
    assertEquals(opId(900), get(bulk, "limit=1").bodyAsJsonObject().getJsonArray("items").getJsonObject(0).getString("id"));
  }

  @Test
  void everyFilterSelectsWhatTheModelSays() {
    String bulk = bulkScope();
    Instant since = BASE.minusSeconds(40);
    Instant until = BASE.minusSeconds(10);
    Map<String, Predicate<Row>> filters = new java.util.LinkedHashMap<>();
    filters.put("kind=rekey", r -> r.kind().equals("rekey"));
    filters.put("kind=rekey,drain_ingress", r -> !r.kind().equals("move_relay"));
    filters.put("kind=move_relay,rekey,rekey", r -> !r.kind().equals("drain_ingress"));
    filters.put("status=failed", r -> r.status().equals("failed"));
    filters.put("status=open", r -> Set.of("pending", "delivered").contains(r.status()));
    filters.put("status=open,expired", r -> Set.of("pending", "delivered", "expired").contains(r.status()));
    filters.put("status=succeeded&kind=move_relay", r -> r.status().equals("succeeded") && r.kind().equals("move_relay"));
    filters.put("status=expired&kind=drain_ingress,rekey", r -> r.status().equals("expired") && !r.kind().equals("move_relay"));
    filters.put("node_id=" + nodeId(2), r -> r.nodeId().equals(nodeId(2)));
    filters.put("node_id=" + nodeId(2) + "&status=failed,expired&kind=rekey",
        r -> r.nodeId().equals(nodeId(2)) && Set.of("failed", "expired").contains(r.status()) && r.kind().equals("rekey"));
    filters.put("node_id=" + nodeId(99), r -> false);
    filters.put("since=" + since, r -> !r.requestedAt().isBefore(since));
    filters.put("until=" + until, r -> r.requestedAt().isBefore(until));
    filters.put("since=" + since + "&until=" + until + "&status=succeeded",
        r -> !r.requestedAt().isBefore(since) && r.requestedAt().isBefore(until) && r.status().equals("succeeded"));
    filters.put("until=" + BASE.minusSeconds(3600), r -> false);
    for (Map.Entry<String, Predicate<Row>> f : filters.entrySet()) {
      List<String> want = expected("bulk", "prod", f.getValue().and(r -> !r.id().equals(opId(900))));
      List<String> got = all(bulk, f.getKey(), 9).stream().filter(id -> !id.equals(opId(900))).toList();
      assertEquals(want, got, f.getKey());
    }
    // a timestamp with an offset is the same instant
    String offset = URLEncoder.encode(since.atOffset(java.time.ZoneOffset.ofHours(2)).toString(), StandardCharsets.UTF_8);
    assertEquals(all(bulk, "since=" + since, 100), all(bulk, "since=" + offset, 100));
  }

  @Test
  void aCallerSeesOnlyTheOperationsOfItsScope() {
    String rival = Tokens.issue(app, "rival", "prod", Surface.OPERATOR).jwt();
    assertEquals(expected("rival", "prod", r -> true), all(rival, "", 5));
    // another team's node named in the filter: nothing, not an error
    assertEquals(List.of(), all(rival, "node_id=" + nodeId(2), 5));
    assertEquals(List.of(), all(Tokens.issue(app, "nobody", "prod", Surface.PIPELINE).jwt(), "status=open", 5));
    // a team's every environment
    String wholeTeam = Tokens.issue(app, "bulk", "*", Surface.MONITORING).jwt();
    Set<String> bulkAll = new HashSet<>(expected("bulk", "prod", r -> true));
    bulkAll.addAll(expected("bulk", "staging", r -> true));
    List<String> got = all(wholeTeam, "", 40).stream().filter(id -> !id.equals(opId(900))).toList();
    assertEquals(bulkAll, new HashSet<>(got));
    assertEquals(bulkAll.size(), got.size());
    // `*` sees every team, in the one order
    List<String> everything = all(admin, "", 100);
    assertTrue(everything.containsAll(expected("rival", "prod", r -> true)) && everything.containsAll(bulkAll), "every team");
    List<String> failedEverywhere = all(admin, "status=failed", 6);
    List<String> failedModel = ROWS.stream().filter(r -> r.status().equals("failed"))
        .sorted(Comparator.comparing(Row::requestedAt).thenComparing(Row::id).reversed()).map(Row::id).toList();
    assertEquals(failedModel, failedEverywhere);
    // nodes:read is needed: an enrollment token is refused, and the denial is audited
    HttpResponse<Buffer> denied = get(Tokens.issue(app, "bulk", "prod", Surface.ENROLLMENT).jwt(), "");
    assertEquals(403, denied.statusCode(), denied.bodyAsString());
    JsonArray audit = Await.until("the denial audited", () -> http.get(app.coordinatorPort(),
        "/v1/audit?action=operation.list", admin).bodyAsJsonObject().getJsonArray("items"), a -> !a.isEmpty());
    assertEquals("denied", audit.getJsonObject(0).getString("outcome"));
    assertNull(audit.getJsonObject(0).getValue("target"), audit.encode());
  }

  @Test
  void aBadParameterIsA400NamingIt() {
    String bulk = bulkScope();
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("kind=reboot", "kind");
    bad.put("kind=rekey,", "kind");
    bad.put("kind=", "kind");
    bad.put("status=done", "status");
    bad.put("status=open,closed", "status");
    bad.put("status=", "status");
    bad.put("status=FAILED", "status");
    bad.put("node_id=web-1", "node_id");
    bad.put("node_id=op_01m8000000000000000000000z", "node_id");
    bad.put("since=yesterday", "since");
    bad.put("since=2026-11-01T00:00:00", "since");
    bad.put("until=2026-13-01T00:00:00Z", "until");
    bad.put("since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", "until");
    bad.put("since=2026-11-01T00:00:00Z&until=2026-11-01T00:00:00Z", "until");
    bad.put("limit=0", "limit");
    bad.put("limit=1001", "limit");
    bad.put("cursor=forged", "cursor");
    bad.put("stauts=failed", "stauts");
    bad.put("team=rival", "team");
    bad.put("kind=rekey&kind=move_relay", "kind");
    for (Map.Entry<String, String> b : bad.entrySet()) {
      HttpResponse<Buffer> r = get(bulk, b.getKey());
      assertEquals(400, r.statusCode(), b.getKey() + " -> " + r.bodyAsString());
      JsonObject problem = r.bodyAsJsonObject();
      assertEquals("invalid_request", problem.getString("code"), problem.encode());
      assertEquals(b.getValue(), problem.getJsonArray("errors").getJsonObject(0).getString("field"), b.getKey() + " -> " + problem.encode());
    }
    // a cursor of another list (a node's operations) is not this list's
    String nodeCursor = http.get(app.coordinatorPort(), "/v1/nodes?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    if (nodeCursor != null) assertEquals(400, get(bulk, "cursor=" + nodeCursor).statusCode());
  }

  @Test
  void thePanelListsTheSameWithASession() {
    PanelSession.user(app, "ops-viewer", "viewer", "bulk", "prod");
    PanelSession viewer = PanelSession.signIn(http, app.panelPort(), "ops-viewer");
    HttpResponse<Buffer> r = viewer.get(app.panelPort(), "/api/v1/operations?status=open&limit=5");
    assertEquals(200, r.statusCode(), r.bodyAsString());
    List<String> open = expected("bulk", "prod", x -> Set.of("pending", "delivered").contains(x.status()));
    JsonObject page = r.bodyAsJsonObject();
    assertEquals(open.subList(0, 5), page.getJsonArray("items").stream().map(o -> ((JsonObject) o).getString("id")).toList());
    HttpResponse<Buffer> next = viewer.get(app.panelPort(), "/api/v1/operations?status=open&limit=5&cursor=" + page.getString("next_cursor"));
    assertEquals(open.subList(5, 10), next.bodyAsJsonObject().getJsonArray("items").stream()
        .map(o -> ((JsonObject) o).getString("id")).toList());
    HttpResponse<Buffer> badStatus = viewer.get(app.panelPort(), "/api/v1/operations?status=done");
    assertEquals(400, badStatus.statusCode());
    assertEquals("status", badStatus.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(401, http.get(app.panelPort(), "/api/v1/operations").statusCode(), "no session");
  }

  @Test
  void aRealOperationIsListedOpenThenSucceeded() {
    HttpResponse<Buffer> enrolled = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes", admin, new JsonObject()
        .put("name", "live-1").put("public_key", Nodes.key()).put("team", "live").put("environment", "prod").put("region", "eu"));
    assertEquals(201, enrolled.statusCode(), enrolled.bodyAsString());
    Nodes.Enrolled n = new Nodes.Enrolled(enrolled.bodyAsJsonObject().getJsonObject("node").getString("id"), "live-1",
        enrolled.bodyAsJsonObject().getJsonObject("credential").getString("token"), enrolled.bodyAsJsonObject().getJsonObject("node"));
    String key = n.node().getString("public_key");
    String from = n.node().getString("relay");
    String to = "fra1".equals(from) ? "ams1" : "fra1";
    http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(),
        new JsonObject().put("public_key", key).put("relay", from));
    String live = Tokens.issue(app, "live", "prod", Surface.OPERATOR).jwt();
    HttpResponse<Buffer> rekey = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/rekey", live, null);
    assertEquals(202, rekey.statusCode(), rekey.bodyAsString());
    HttpResponse<Buffer> move = http.send(HttpMethod.PUT, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/relay", live,
        new JsonObject().put("relay", to));
    assertEquals(202, move.statusCode(), move.bodyAsString());
    String rekeyId = rekey.bodyAsJsonObject().getString("id");
    String moveId = move.bodyAsJsonObject().getString("id");
    // newest first: the move, then the re-key; both open
    assertEquals(List.of(moveId, rekeyId), all(live, "status=open", 10));
    assertEquals(List.of(moveId, rekeyId), all(live, "node_id=" + n.id(), 10));
    assertEquals(List.of(rekeyId), all(live, "kind=rekey&status=pending", 10));

    // the agent does the re-key and reports it: the list shows it succeeded and no longer open
    JsonObject answer = Await.until("the answer carries the commands", () -> http.send(HttpMethod.POST, app.coordinatorPort(),
        "/v1/nodes/" + n.id() + "/heartbeat", n.token(), new JsonObject().put("public_key", key).put("relay", from)).bodyAsJsonObject(),
        a -> a.getJsonArray("commands").size() == 2);
    assertEquals(2, answer.getJsonArray("commands").size());
    JsonObject result = new JsonObject().put("public_key", Nodes.key()).put("relay", from).put("command_results", new JsonArray()
        .add(new JsonObject().put("id", rekeyId).put("status", "succeeded").put("detail", "new key pair generated")));
    assertEquals(200, http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), result)
        .statusCode());
    Await.until("the re-key listed as succeeded", () -> all(live, "status=succeeded", 10), ids -> ids.equals(List.of(rekeyId)));
    assertEquals(List.of(moveId), all(live, "status=open", 10));
    Await.until("the move listed as delivered", () -> all(live, "status=delivered&kind=move_relay", 10), ids -> ids.equals(List.of(moveId)));
  }

  private static void insert(Row r) {
    try (Connection c = cluster.db().connect(); PreparedStatement st = c.prepareStatement("INSERT INTO operations (id, node_id, team, "
        + "environment, kind, status, target, actor_type, actor_id, actor_name, requested_at, deadline) "
        + "VALUES (?, ?, ?, ?, ?, ?, '{}', 'token', 'tok_x', 'root', ?, ?)")) {
      st.setString(1, r.id());
      st.setString(2, r.nodeId());
      st.setString(3, r.team());
      st.setString(4, r.environment());
      st.setString(5, r.kind());
      st.setString(6, r.status());
      st.setTimestamp(7, Timestamp.from(r.requestedAt()));
      st.setTimestamp(8, Timestamp.from(r.requestedAt().plus(1, ChronoUnit.HOURS)));
      st.executeUpdate();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
