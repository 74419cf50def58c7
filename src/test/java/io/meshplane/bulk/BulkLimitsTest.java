package io.meshplane.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Grants;
import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.common.Page;
import io.meshplane.common.RequestInfo;
import io.meshplane.node.NodeActions;
import io.meshplane.node.NodeFilter;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The bulk's budgets on a real replica: the per-replica limit on per-node actions in flight shared by
 * concurrent bulks (observed while their rows are locked in PostgreSQL, so the actions wait there),
 * 429 for a caller's second bulk, 503 past the replica's running bulks, the time budget running out
 * (nodes not reached answer {@code failed}), an unexpected error answered with the request id only,
 * and the counters coming back down after a synchronous throw.
 */
@Timeout(180)
class BulkLimitsTest {
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane app;
  static Http http;
  static String root;

  @BeforeAll
  static void start() {
    // the production pool size (tests default to 4): the bulks' slots are a quarter of it
    cluster = TestCluster.started(1, java.util.Map.of("postgres.pool_size", "16"));
    db = cluster.db();
    app = cluster.replica(0);
    http = cluster.http();
    root = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static String operator() {
    return Tokens.issue(app, "alpha", "prod", Surface.OPERATOR).jwt();
  }

  static JsonObject retag(List<String> ids) {
    return new JsonObject().put("action", "retag").put("tags", new JsonArray().add("tag:slot")).put("ids", new JsonArray(ids));
  }

  static Future<HttpResponse<Buffer>> async(String token, JsonObject body) {
    return http.sendAsync(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/bulk", token, body);
  }

  static long bulksAudited() throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM audit_events WHERE action = 'node.bulk'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static List<String> enroll(String prefix, int n) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) ids.add(Nodes.enroll(http, app.coordinatorPort(), root, prefix + i, "alpha", "prod").id());
    return ids;
  }

  @Test
  void concurrentBulksShareOneLimitAndTheReplicaRefusesPastItsBudgets() throws Exception {
    BulkModule bulk = app.bulk();
    int limit = BulkModule.Settings.DEFAULTS.nodeActionsInFlight();
    List<String> ids = enroll("slot-", 12);
    String a = operator();
    String b = operator();
    List<Future<HttpResponse<Buffer>>> answers = new ArrayList<>();
    try (Connection lock = db.connect()) {
      lock.setAutoCommit(false);
      try (Statement st = lock.createStatement()) {
        // the bulks' updates wait on these row locks: their actions stay in flight until the rollback
        st.executeQuery("SELECT id FROM nodes WHERE name LIKE 'slot-%' FOR UPDATE").close();
      }
      long audited = bulksAudited();
      answers.add(async(a, retag(ids.subList(0, 6))));
      answers.add(async(b, retag(ids.subList(6, 12))));
      // two bulks of six: eight would start at the old eight per bulk; the replica's limit holds them
      Await.until("the limit reached by two bulks", () -> bulk.nodeActionsInFlight() == limit);

      // the same caller again, while its bulk runs: 429
      HttpResponse<Buffer> again = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/bulk", a, retag(ids.subList(0, 1)));
      assertEquals(429, again.statusCode(), again.bodyAsString());
      assertTrue(again.getHeader("Retry-After") != null, "Retry-After");

      // two more callers: four bulks running (their nodes wait for a slot); a fifth caller gets 503
      answers.add(async(operator(), retag(ids.subList(0, 3))));
      answers.add(async(operator(), retag(ids.subList(3, 6))));
      Await.until("four bulks audited (running)", BulkLimitsTest::bulksAudited, n -> n == audited + 4);
      HttpResponse<Buffer> busy = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/bulk", operator(), retag(ids.subList(0, 1)));
      assertEquals(503, busy.statusCode(), busy.bodyAsString());
      assertEquals("busy", busy.bodyAsJsonObject().getString("code"), busy.bodyAsString());
      assertTrue(busy.getHeader("Retry-After") != null, "Retry-After");
      assertEquals(limit, bulk.nodeActionsInFlight(), "still the limit with four bulks waiting");
      // the rest of the pool is free for other writes: an enrollment goes through while the bulks wait
      Nodes.enroll(http, app.coordinatorPort(), root, "during-bulks", "alpha", "prod");
      lock.rollback();
    }
    for (Future<HttpResponse<Buffer>> f : answers) {
      HttpResponse<Buffer> r = Await.result("a bulk's answer", 60_000, f);
      assertEquals(200, r.statusCode(), r.bodyAsString());
      JsonObject body = r.bodyAsJsonObject();
      assertEquals(body.getInteger("total"), body.getInteger("ok"), body.encode());
    }
    assertTrue(bulk.nodeActionsPeak() <= limit, "never more than the limit in flight: " + bulk.nodeActionsPeak());
    Await.until("every slot back", () -> bulk.nodeActionsInFlight() == 0);
    // the counters came back down: the same caller runs another bulk
    HttpResponse<Buffer> after = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/nodes/bulk", a, retag(ids.subList(0, 1)));
    assertEquals(200, after.statusCode(), after.bodyAsString());
  }

  static Caller caller(String id) {
    return new Caller(Caller.Kind.TOKEN, id, "bulk-test", new Boundary("alpha", "prod"), Grants.of(Surface.OPERATOR), id,
        System.currentTimeMillis() + 3_600_000);
  }

  static BulkService service(NodeActions nodes, Duration budget) {
    return new BulkService(app.pool(), app.audit().log(), nodes, (c, r, id) -> Future.failedFuture(new IllegalStateException("no rekey here")),
        new NodeSlots(2), budget);
  }

  static List<BulkService.Result> run(BulkService s, Caller c, BulkService.Request req) {
    return Await.result("the bulk", 30_000, s.run(c, new RequestInfo("req-bulk-test", null), req, Page.INLINE));
  }

  @Test
  void nodesNotReachedWithinTheBudgetAreFailedAndUntouched() {
    List<String> ids = enroll("budget-", 3);
    BulkService s = service(app.nodes().service(), Duration.ZERO);
    List<BulkService.Result> results = run(s, caller("tok_budget"), new BulkService.Request("retag", new String[] {"tag:late"}, ids, null, false));
    assertEquals(3, results.size());
    for (BulkService.Result r : results) {
      assertEquals("failed", r.outcome(), r.toString());
      assertEquals("not attempted: the bulk's time budget of 0 s ran out before this node was reached", r.detail());
      JsonObject node = http.get(app.coordinatorPort(), "/v1/nodes/" + r.id(), root).bodyAsJsonObject();
      assertFalse(node.getJsonArray("tags").contains("tag:late"), node.encode());
    }
    assertEquals(0, s.slots().inFlight());
  }

  @Test
  void unexpectedErrorsAnswerTheRequestIdAndCountersAlwaysComeBack() {
    NodeActions real = app.nodes().service();
    boolean[] throwOnMatching = {true};
    NodeActions broken = new NodeActions() {
      @Override
      public Future<JsonObject> get(Caller caller, String id) {
        return real.get(caller, id);
      }

      @Override
      public Future<JsonObject> retag(Caller caller, RequestInfo request, String id, String[] tags) {
        throw new IllegalStateException("ERROR: duplicate key value violates unique constraint \"nodes_secret_key\"");
      }

      @Override
      public Future<Void> delete(Caller caller, RequestInfo request, String id) {
        return Future.failedFuture(new IllegalStateException("relation \"nodes\" does not exist"));
      }

      @Override
      public Future<List<JsonObject>> matching(Caller caller, NodeFilter filter, int max, Page.Offload offload) {
        if (throwOnMatching[0]) throw new IllegalStateException("thrown before the chain starts");
        return real.matching(caller, filter, max, offload);
      }
    };
    BulkService s = service(broken, Duration.ofSeconds(30));
    Caller c = caller("tok_broken");
    List<String> ids = enroll("broken-", 2);
    for (String action : List.of("retag", "delete")) {
      List<BulkService.Result> results = run(s, c, new BulkService.Request(action, new String[] {"tag:x"}, ids, null, false));
      for (BulkService.Result r : results) {
        assertEquals("failed", r.outcome(), r.toString());
        assertEquals("internal error; request id req-bulk-test", r.detail(), "no database text for the client");
      }
    }
    // a synchronous throw before the chain starts: a failed answer, and the counters back down
    NodeFilter filter = NodeFilter.parse(k -> "name_prefix".equals(k) ? "broken-" : null, new io.meshplane.common.Fields(), "");
    BulkService.Request byFilter = new BulkService.Request("retag", new String[] {"tag:x"}, null, filter, true);
    Future<List<BulkService.Result>> thrown = s.run(c, RequestInfo.NONE, byFilter, Page.INLINE);
    assertTrue(thrown.failed(), "answered as a failure");
    assertEquals(0, s.running(), "the replica's count came back");
    throwOnMatching[0] = false;
    List<BulkService.Result> dry = run(s, c, byFilter); // the same caller: not 429
    assertEquals(2, dry.size());
    dry.forEach(r -> assertEquals("ok", r.outcome(), r.toString()));
  }
}
