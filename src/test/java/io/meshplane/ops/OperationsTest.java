package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import ch.qos.logback.classic.Level;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogLines;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PgProxy;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Node operations end to end over real HTTP, two replicas and PostgreSQL, with the test speaking for
 * the agents: each operation's lifecycle as seen in heartbeats and in the records, agents that lie,
 * operations nobody receives, results that are not theirs, and a delivering replica that dies.
 */
@Timeout(300)
class OperationsTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static final Map<String, String> SETTINGS = Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms",
      "operations.deadline", "8s", "nodes.pending_ttl", "2s", "heartbeat.stale_after", "3s");
  static final String IGNORED = "mesh_ops_results_ignored_total";
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    // planned for three: the crash test starts a third replica and kills it
    cluster = TestCluster.of(3);
    a = cluster.start(0, SETTINGS);
    b = cluster.start(1, SETTINGS);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag)).put("region", "eu");
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static JsonObject beat(Meshplane via, Nodes.Enrolled n, JsonObject body) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, via.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  static HttpResponse<Buffer> call(Meshplane via, HttpMethod method, String path, JsonObject body) {
    return http.send(method, via.coordinatorPort(), path, admin, body);
  }

  static JsonObject node(Nodes.Enrolled n) {
    return call(b, HttpMethod.GET, "/v1/nodes/" + n.id(), null).bodyAsJsonObject();
  }

  static JsonObject operation(String id) {
    HttpResponse<Buffer> r = call(b, HttpMethod.GET, "/v1/operations/" + id, null);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Reads the operation until {@code done} holds (20 s at most). */
  static JsonObject awaitOperation(String id, Predicate<JsonObject> done) {
    return Await.until("operation " + id + " reaches the awaited state", 20_000, () -> operation(id), done);
  }

  /** Beats until the answer carries a command (the board of the answering replica has learned of the operation). */
  static JsonObject beatUntilCommand(Meshplane via, Nodes.Enrolled n, JsonObject body, String opId) {
    return Await.until("a heartbeat answer carries " + opId, () -> beat(via, n, body), answer -> hasCommand(answer, opId));
  }

  /** Beats until the answer no longer carries the command (the answering replica's board has the completion). */
  static JsonObject beatUntilNoCommand(Meshplane via, Nodes.Enrolled n, JsonObject body, String opId) {
    return Await.until("no heartbeat answer carries " + opId, () -> beat(via, n, body), answer -> !hasCommand(answer, opId));
  }

  /** Waits until replica {@code m} has applied the change log up to {@code position} (its boards and models hold it). */
  static void awaitPosition(Meshplane m, long position) {
    Await.until("replica " + m.coordinatorPort() + " applied change " + position, () -> m.changes().position(), p -> p >= position);
  }

  static double metric(Meshplane m, String series) {
    return Metrics.value(http, m.coordinatorPort(), series);
  }

  static boolean hasCommand(JsonObject answer, String opId) {
    for (Object c : answer.getJsonArray("commands")) if (((JsonObject) c).getString("id").equals(opId)) return true;
    return false;
  }

  static JsonObject result(String opId, String status) {
    return new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", opId).put("status", status)
        .put("detail", "done by the test agent")));
  }

  static void grantAll(String team) {
    JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("*"))
        .put("dst", new JsonArray().add("*")).put("ports", new JsonArray().add("*"))));
    HttpResponse<Buffer> r = call(a, HttpMethod.PUT, "/v1/acl?team=" + team + "&environment=prod", policy);
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  @Test
  void aRekeySucceedsOnlyWithANewKeyAndThePeersOfTheNodeReceiveIt() throws Exception {
    Nodes.Enrolled web = enroll("rk-web", "rekey", "tag:web");
    Nodes.Enrolled db = enroll("rk-db", "rekey", "tag:db");
    grantAll("rekey");
    String oldKey = web.node().getString("public_key");
    beat(a, web, new JsonObject().put("public_key", oldKey));
    JsonObject dbView = beat(b, db, new JsonObject());

    HttpResponse<Buffer> r = call(a, HttpMethod.POST, "/v1/nodes/" + web.id() + "/rekey", null);
    assertEquals(202, r.statusCode(), r.bodyAsString());
    JsonObject op = r.bodyAsJsonObject();
    assertEquals("pending", op.getString("status"));
    assertEquals("rekey", op.getString("kind"));
    assertEquals("token", op.getJsonObject("requested_by").getString("type"));
    assertTrue(r.getHeader("Location").endsWith("/v1/operations/" + op.getString("id")));
    assertEquals(409, call(b, HttpMethod.POST, "/v1/nodes/" + web.id() + "/rekey", null).statusCode(), "one re-key at a time");

    JsonObject answer = beatUntilCommand(b, web, new JsonObject().put("public_key", oldKey), op.getString("id"));
    assertEquals(new JsonObject().put("id", op.getString("id")).put("kind", "rekey"), answer.getJsonArray("commands").getJsonObject(0));
    assertEquals("delivered", awaitOperation(op.getString("id"), o -> !o.getString("status").equals("pending")).getString("status"));

    String newKey = Nodes.key();
    beat(a, web, result(op.getString("id"), "succeeded").put("public_key", newKey));
    JsonObject done = awaitOperation(op.getString("id"), o -> o.getString("completed_at") != null);
    assertEquals("succeeded", done.getString("status"), done.encode());
    assertEquals(newKey, done.getJsonObject("result").getString("new_key"));
    assertEquals(newKey, node(web).getString("public_key"));
    // the command is not sent any more, once every replica's board has the completion
    beatUntilNoCommand(b, web, new JsonObject().put("public_key", newKey), op.getString("id"));

    // its peer learns the new key (a delta from the version it holds), through the write-behind and the change log
    long known = dbView.getJsonObject("peers").getLong("version");
    String seen = Await.until("the peer's heartbeat carries the new key", () -> {
      JsonObject peers = beat(a, db, new JsonObject().put("known", new JsonObject().put("peers", known))).getJsonObject("peers");
      JsonArray entries = peers.containsKey("items") ? peers.getJsonArray("items") : peers.getJsonArray("changed", new JsonArray());
      String key = null;
      for (Object o : entries) if (((JsonObject) o).getString("id").equals(web.id())) key = ((JsonObject) o).getString("public_key");
      return key;
    }, newKey::equals);
    assertEquals(newKey, seen, "the peer's heartbeat carries the new key");
  }

  @Test
  void anAgentThatClaimsSuccessWhileItsHeartbeatContradictsItFails() throws Exception {
    Nodes.Enrolled n = enroll("liar", "liars", "tag:x");
    String oldKey = n.node().getString("public_key");
    String opId = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    // delivered by b, reported to b (a replica whose board has not caught up yet ignores the result;
    // the agent reports it again while the command keeps coming)
    beatUntilCommand(b, n, new JsonObject().put("public_key", oldKey), opId);
    beat(b, n, result(opId, "succeeded").put("public_key", oldKey));
    JsonObject done = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("failed", done.getString("status"));
    assertTrue(done.getJsonObject("result").getString("detail").contains("still shows the old public_key"), done.encode());
    assertEquals("succeeded", done.getJsonObject("result").getJsonObject("reported").getString("status"), "what the agent said is kept");
    assertEquals(oldKey, node(n).getString("public_key"));

    // an agent that reports failure: failed with its own words
    String second = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    beatUntilCommand(a, n, new JsonObject(), second);
    beat(a, n, new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", second).put("status", "failed")
        .put("detail", "no entropy"))));
    JsonObject failed = awaitOperation(second, o -> o.getString("completed_at") != null);
    assertEquals("failed", failed.getString("status"));
    assertEquals("no entropy", failed.getJsonObject("result").getString("detail"));
  }

  @Test
  void aDrainClaimedWhileTheHeartbeatDoesNotShowTheIngressDrainedFails() throws Exception {
    Nodes.Enrolled n = enroll("drain-liar", "liars", "tag:edge");
    JsonObject ingress = new JsonObject().put("name", "web").put("hostname", "lie.example.net").put("port", 443);
    assertEquals(201, call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress", ingress).statusCode());
    JsonArray active = new JsonArray().add(new JsonObject().put("name", "web").put("state", "active"));

    // the agent says it drained, and the same heartbeat shows the ingress still active
    String opId = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", null).bodyAsJsonObject().getString("id");
    beatUntilCommand(a, n, new JsonObject().put("ingress", active), opId);
    beat(a, n, result(opId, "succeeded").put("ingress", active));
    JsonObject done = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("failed", done.getString("status"), done.encode());
    assertEquals("the agent reported success but its heartbeat shows ingress web active", done.getJsonObject("result").getString("detail"));
    assertEquals(new JsonObject().put("status", "succeeded").put("detail", "done by the test agent"),
        done.getJsonObject("result").getJsonObject("reported"), "what the agent said is kept");
    assertEquals("active", node(n).getJsonArray("ingress").getJsonObject(0).getString("state"), "a failed drain leaves the ingress active");

    // again, with no ingress at all in the heartbeat that claims it (reported to the other replica)
    HttpResponse<Buffer> again = call(b, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", null);
    assertEquals(202, again.statusCode(), again.bodyAsString());
    String second = again.bodyAsJsonObject().getString("id");
    beatUntilCommand(b, n, new JsonObject().put("ingress", active), second);
    beat(b, n, result(second, "succeeded"));
    JsonObject absent = awaitOperation(second, o -> o.getString("completed_at") != null);
    assertEquals("failed", absent.getString("status"), absent.encode());
    assertEquals("the agent reported success but its heartbeat shows ingress web absent", absent.getJsonObject("result").getString("detail"));
    assertEquals("active", node(n).getJsonArray("ingress").getJsonObject(0).getString("state"));
  }

  @Test
  void aRekeyClaimedInAHeartbeatWithoutAPublicKeyFails() throws Exception {
    Nodes.Enrolled n = enroll("keyless", "liars", "tag:x");
    String oldKey = n.node().getString("public_key");
    String opId = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    beatUntilCommand(b, n, new JsonObject().put("public_key", oldKey), opId);
    beat(b, n, result(opId, "succeeded")); // no public_key: no evidence of a new key
    JsonObject done = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("failed", done.getString("status"), done.encode());
    assertEquals("the agent reported success but its heartbeat carried no public_key", done.getJsonObject("result").getString("detail"));
    assertEquals("succeeded", done.getJsonObject("result").getJsonObject("reported").getString("status"));
    assertFalse(done.getJsonObject("result").containsKey("new_key"), done.encode());
    assertEquals(oldKey, node(n).getString("public_key"), "a heartbeat without public_key keeps the last");
  }

  @Test
  void aRelayMoveShowsMovingUntilTheHeartbeatReportsTheNewRelay() throws Exception {
    Nodes.Enrolled n = enroll("mover", "movers", "tag:x");
    String from = n.node().getString("relay");
    String to = from.equals("fra1") ? "ams1" : "fra1";
    beat(a, n, new JsonObject().put("relay", from));
    assertEquals("connected", node(n).getString("relay_status"));

    assertEquals(409, call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/relay", new JsonObject().put("relay", from)).statusCode(),
        "already there");
    HttpResponse<Buffer> bad = call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/relay", new JsonObject().put("relay", "nowhere"));
    assertEquals(400, bad.statusCode());
    assertEquals("relay", bad.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));

    HttpResponse<Buffer> r = call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/relay", new JsonObject().put("relay", to));
    assertEquals(202, r.statusCode(), r.bodyAsString());
    String opId = r.bodyAsJsonObject().getString("id");
    assertEquals(new JsonObject().put("relay", to).put("from", from), r.bodyAsJsonObject().getJsonObject("target"));
    assertEquals(409, call(b, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/relay", new JsonObject().put("relay", from)).statusCode(),
        "one move at a time");
    JsonObject record = node(n);
    assertEquals(to, record.getString("relay"));
    assertEquals("moving", record.getString("relay_status"));

    JsonObject answer = beatUntilCommand(b, n, new JsonObject().put("relay", from), opId);
    assertEquals(new JsonObject().put("id", opId).put("kind", "move_relay").put("relay", to), answer.getJsonArray("commands").getJsonObject(0));
    assertEquals(to, answer.getString("relay"), "the answer names the new assignment");
    beat(b, n, result(opId, "succeeded").put("relay", to));
    assertEquals("succeeded", awaitOperation(opId, o -> o.getString("completed_at") != null).getString("status"));
    assertEquals("connected", node(n).getString("relay_status"));

    // a move the agent claims but does not make fails, and the assignment goes back where the node is
    String back = call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/relay", new JsonObject().put("relay", from)).bodyAsJsonObject()
        .getString("id");
    beatUntilCommand(a, n, new JsonObject().put("relay", to), back);
    beat(a, n, result(back, "succeeded").put("relay", to));
    JsonObject failed = awaitOperation(back, o -> o.getString("completed_at") != null);
    assertEquals("failed", failed.getString("status"));
    assertTrue(failed.getJsonObject("result").getString("detail").contains("shows relay " + to), failed.encode());
    JsonObject after = node(n);
    assertEquals(to, after.getString("relay"), "the failed move is undone");
    assertEquals("connected", after.getString("relay_status"));
  }

  @Test
  void anIngressIsDeliveredThenDrainedThroughTheHeartbeat() throws Exception {
    Nodes.Enrolled n = enroll("edge", "edges", "tag:edge");
    JsonObject ingress = new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443);
    HttpResponse<Buffer> r = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress", ingress);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject expected = ingress.copy().put("state", "active");
    assertEquals(new JsonArray().add(expected), r.bodyAsJsonObject().getJsonArray("ingress"));
    assertEquals(409, call(b, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress", ingress).statusCode(), "the name is taken");
    HttpResponse<Buffer> bad = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress",
        new JsonObject().put("name", "x").put("hostname", "bad host").put("port", 70000));
    assertEquals(400, bad.statusCode());
    assertEquals(2, bad.bodyAsJsonObject().getJsonArray("errors").size(), bad.bodyAsString());
    // every replica's answers carry it (the change reached b's board before a answered the POST? b polls on the announcement)
    JsonObject answer = Await.until("b's answer carries the ingress", () -> beat(b, n, new JsonObject()),
        ans -> !ans.getJsonArray("ingress").isEmpty());
    assertEquals(new JsonArray().add(expected), answer.getJsonArray("ingress"));

    assertEquals(404, call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/api/drain", null).statusCode());
    r = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", null);
    assertEquals(202, r.statusCode(), r.bodyAsString());
    String opId = r.bodyAsJsonObject().getString("id");
    assertEquals("draining", node(n).getJsonArray("ingress").getJsonObject(0).getString("state"));
    JsonObject active = new JsonObject().put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "active")));
    answer = beatUntilCommand(a, n, active, opId);
    assertEquals(new JsonObject().put("id", opId).put("kind", "drain_ingress").put("name", "web"), answer.getJsonArray("commands").getJsonObject(0));
    assertEquals("draining", answer.getJsonArray("ingress").getJsonObject(0).getString("state"));
    beat(a, n, result(opId, "succeeded").put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "drained"))));
    assertEquals("succeeded", awaitOperation(opId, o -> o.getString("completed_at") != null).getString("status"));
    assertEquals("drained", node(n).getJsonArray("ingress").getJsonObject(0).getString("state"));
    assertEquals(409, call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", null).statusCode(), "drained already");

    JsonObject page = call(b, HttpMethod.GET, "/v1/nodes/" + n.id() + "/operations?status=succeeded", null).bodyAsJsonObject();
    assertEquals(1, page.getJsonArray("items").size());
    assertEquals(opId, page.getJsonArray("items").getJsonObject(0).getString("id"));
    assertEquals(0, call(b, HttpMethod.GET, "/v1/nodes/" + n.id() + "/operations?status=failed", null).bodyAsJsonObject()
        .getJsonArray("items").size());
    assertEquals(400, call(b, HttpMethod.GET, "/v1/nodes/" + n.id() + "/operations?status=done", null).statusCode());
  }

  /**
   * API.md §9 lifecycle: an operation stays {@code pending} while no heartbeat answer has carried it (a stale
   * node does not beat); the node's next heartbeat carries it and it completes; a node that stays
   * silent sees it expire undelivered, and it is not sent after its expiry.
   */
  @Test
  void anOperationOnAStaleNodeStaysPendingUntilItsNextHeartbeatOrExpires() throws Exception {
    Nodes.Enrolled back = enroll("returning", "silence", "tag:x");
    Nodes.Enrolled n = enroll("silent", "silence", "tag:x");
    String backKey = back.node().getString("public_key");
    beat(a, back, new JsonObject().put("public_key", backKey));
    beat(a, n, new JsonObject());
    Await.until("both nodes stale (heartbeat.stale_after = 3 s)",
        () -> "stale".equals(node(n).getString("status")) && "stale".equals(node(back).getString("status")));
    String backOp = call(a, HttpMethod.POST, "/v1/nodes/" + back.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    String opId = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    // both replicas' boards hold both operations: only a heartbeat answer could deliver them now
    awaitPosition(b, a.changes().position());
    for (String id : new String[] {backOp, opId}) {
      JsonObject op = operation(id);
      assertEquals("pending", op.getString("status"), "nobody received it: " + op.encode());
      assertNull(op.getString("delivered_at"), op.encode());
    }

    // the stale node beats again: the first answer carries the command (the request was answered by a,
    // so a's board holds it), the operation is delivered, and the node's report completes it
    JsonObject answer = beat(a, back, new JsonObject().put("public_key", backKey));
    assertTrue(hasCommand(answer, backOp), "the first heartbeat after the silence carries the command: " + answer.encode());
    JsonObject delivered = awaitOperation(backOp, o -> !o.getString("status").equals("pending"));
    assertEquals("delivered", delivered.getString("status"), delivered.encode());
    assertTrue(delivered.getString("delivered_at") != null, delivered.encode());
    assertEquals("online", node(back).getString("status"), "it is back");
    String newKey = Nodes.key();
    beat(a, back, result(backOp, "succeeded").put("public_key", newKey));
    JsonObject done = awaitOperation(backOp, o -> o.getString("completed_at") != null);
    assertEquals("succeeded", done.getString("status"), done.encode());
    assertEquals(newKey, done.getJsonObject("result").getString("new_key"));
    assertEquals("pending", operation(opId).getString("status"), "the node that stays silent still has not received its own");

    // the silent node's operation expires undelivered
    JsonObject expired = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("expired", expired.getString("status"), expired.encode());
    assertNull(expired.getString("delivered_at"));
    // the expired operation is no longer sent when the node is back (once this replica's board has the
    // expiry: the sweep may have run on the other replica, which tells this one through the change feed)
    Await.until("an expired operation is no longer sent", 5_000, () -> beat(a, n, new JsonObject()),
        ans -> ans.getJsonArray("commands").isEmpty());
    assertEquals(202, call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).statusCode());
  }

  @Test
  void anEnrollmentThatNeverHeartbeatsIsReportedOnce() throws Exception {
    Nodes.Enrolled ghost = enroll("ghost", "silence", "tag:x");
    Nodes.Enrolled alive = enroll("alive", "silence", "tag:x");
    beat(b, alive, new JsonObject()); // written to PostgreSQL within a flush (100 ms), long before nodes.pending_ttl (2 s)
    String path = "/v1/events?type=node.enroll_unconfirmed&node_id=" + ghost.id();
    String alivePath = "/v1/events?type=node.enroll_unconfirmed&node_id=" + alive.id();
    Await.until("the ghost reported", () -> call(a, HttpMethod.GET, path, null).bodyAsJsonObject(),
        e -> !e.getJsonArray("items").isEmpty());
    assertEquals("pending", node(ghost).getString("status"), "it stays pending");
    // the ghost beats late: nothing more is recorded for it, after more sweeps by both replicas (each
    // one started after the late beat) and the flush of its heartbeat
    long checksA = a.heartbeat().unconfirmedChecks();
    long checksB = b.heartbeat().unconfirmedChecks();
    beat(a, ghost, new JsonObject());
    Await.until("two more sweeps on each replica",
        () -> a.heartbeat().unconfirmedChecks() >= checksA + 2 && b.heartbeat().unconfirmedChecks() >= checksB + 2);
    JsonObject events = call(b, HttpMethod.GET, path, null).bodyAsJsonObject();
    assertEquals(1, events.getJsonArray("items").size(), events.encode());
    JsonObject event = events.getJsonArray("items").getJsonObject(0);
    assertEquals(ghost.id(), event.getJsonObject("node").getString("id"));
    assertNull(event.getString("last_heartbeat"), event.encode());
    // the node that did beat is never reported, by either replica
    for (Meshplane via : new Meshplane[] {a, b}) {
      JsonObject none = call(via, HttpMethod.GET, alivePath, null).bodyAsJsonObject();
      assertEquals(0, none.getJsonArray("items").size(), none.encode());
    }
  }

  @Test
  void resultsThatAreNotTheNodesOwnAreIgnoredAndBadOnesRejected() throws Exception {
    Nodes.Enrolled victim = enroll("victim", "results", "tag:x");
    Nodes.Enrolled other = enroll("other", "results", "tag:x");
    String opId = call(a, HttpMethod.POST, "/v1/nodes/" + victim.id() + "/rekey", null).bodyAsJsonObject().getString("id");
    beatUntilCommand(a, victim, new JsonObject(), opId);
    // another node reports the victim's operation, and an operation that does not exist: ignored, nothing applied
    double ignoredA = metric(a, IGNORED);
    double ignoredB = metric(b, IGNORED);
    beat(a, other, result(opId, "succeeded").put("public_key", Nodes.key()));
    beat(b, other, result(io.meshplane.common.Ids.next("op"), "failed"));
    // results are sorted while the heartbeat is answered: both were counted as ignored
    assertEquals(ignoredA + 1, metric(a, IGNORED), "a ignored the result for the victim's operation");
    assertEquals(ignoredB + 1, metric(b, IGNORED), "b ignored the result for an operation that does not exist");
    JsonObject op = operation(opId);
    assertEquals("delivered", op.getString("status"), op.encode());
    // malformed results: 400 naming the field, nothing applied
    for (JsonObject bad : new JsonObject[] {
        new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", opId).put("status", "done"))),
        new JsonObject().put("command_results", new JsonArray().add(new JsonObject().put("id", "nd_x").put("status", "failed"))),
        new JsonObject().put("command_results", new JsonArray().add("op")),
        new JsonObject().put("command_results", new JsonObject())}) {
      HttpResponse<Buffer> r = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + victim.id() + "/heartbeat", victim.token(), bad);
      assertEquals(400, r.statusCode(), bad.encode());
      assertTrue(r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field").startsWith("command_results"), r.bodyAsString());
    }
    assertEquals("delivered", operation(opId).getString("status"));
    // the other node cannot read or touch it outside its rights either: an agent token has no nodes:read
    assertEquals(403, http.get(a.coordinatorPort(), "/v1/operations/" + opId, other.token()).statusCode());
  }

  @Test
  void servicesAreBoundValidatedAndSentInTheAnswer() throws Exception {
    Nodes.Enrolled n = enroll("svc", "services", "tag:x");
    HttpResponse<Buffer> r = call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/services",
        new JsonObject().put("services", new JsonArray().add("ssh:22").add("web:8080").add("ssh:22")));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(new JsonArray().add("ssh:22").add("web:8080"), r.bodyAsJsonObject().getJsonArray("services"));
    JsonObject answer = Await.until("b's answer carries the services", () -> beat(b, n, new JsonObject()),
        ans -> !ans.getJsonArray("services").isEmpty());
    assertEquals(new JsonArray().add("ssh:22").add("web:8080"), answer.getJsonArray("services"));
    // verified through the heartbeat: behind until the agent reports it serves exactly them
    JsonObject sync = node(n).getJsonObject("policy_sync");
    assertEquals("behind", sync.getString("services"));
    assertEquals("behind", sync.getString("state"));
    beat(a, n, new JsonObject().put("services", new JsonArray().add("web:8080").add("ssh:22")));
    assertEquals("current", node(n).getJsonObject("policy_sync").getString("services"));
    HttpResponse<Buffer> bad = call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/services",
        new JsonObject().put("services", new JsonArray().add("ssh:22").add("ssh:0")));
    assertEquals(400, bad.statusCode());
    assertEquals("services[1]", bad.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(new JsonArray().add("ssh:22").add("web:8080"), node(n).getJsonArray("services"), "nothing changed");
    assertEquals(404, call(a, HttpMethod.PUT, "/v1/nodes/nd_0000000000000000000000000000/services",
        new JsonObject().put("services", new JsonArray())).statusCode());
    // unbinding everything: the node leaves the board, its answers end as a node without work
    assertEquals(200, call(a, HttpMethod.PUT, "/v1/nodes/" + n.id() + "/services", new JsonObject().put("services", new JsonArray()))
        .statusCode());
    assertTrue(beat(a, n, new JsonObject()).getJsonArray("services").isEmpty());
  }

  /**
   * API.md §9 "Crash and re-delivery": replica X (a third replica, reaching PostgreSQL through a proxy
   * of its own) is the only one the agent talks to: it delivers the command, then receives the agent's
   * result but cannot write the completion (its way to PostgreSQL is cut), and dies abruptly. The
   * operation is still open; the agent's next heartbeat, sent to replica Y (b, which never answered
   * this node before), gets the command again from Y, and the result it carries completes the
   * operation there: one completion, written by Y for that very heartbeat.
   */
  @Test
  void aCommandDeliveredByAReplicaThatDiesIsDeliveredAgainByAnother() throws Exception {
    try (PgProxy proxy = new PgProxy(); LogLines warnings = LogLines.attach(Level.WARN)) {
      Meshplane x = cluster.start(2, cluster.db().url("127.0.0.1", proxy.port()), SETTINGS);
      Meshplane y = b;
      Nodes.Enrolled n = enroll("survivor", "crash", "tag:x");
      String oldKey = n.node().getString("public_key");
      String opId = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/rekey", null).bodyAsJsonObject().getString("id");
      JsonObject state = new JsonObject().put("public_key", oldKey);
      beatUntilCommand(x, n, state, opId);
      JsonObject delivered = awaitOperation(opId, o -> o.getString("status").equals("delivered"));
      assertEquals("delivered", delivered.getString("status"), "delivered by X: " + delivered.encode());

      // X receives the result but cannot write the completion; the heartbeat is answered all the same
      proxy.cut();
      String newKey = Nodes.key();
      JsonObject report = result(opId, "succeeded").put("public_key", newKey);
      assertTrue(hasCommand(beat(x, n, report), opId), "X's answer still carries the command");
      Await.until("X's completion of " + opId + " failed", () -> !warnings.at(Level.WARN,
          m -> m.startsWith("operation " + opId + " of node " + n.id() + " not completed yet")).isEmpty());
      assertEquals("delivered", operation(opId).getString("status"), "X could not complete it: still open");
      // X dies at once: no goodbye to the cluster
      x.hazelcast().getLifecycleService().terminate();
      x.close();
      assertEquals("delivered", operation(opId).getString("status"), "nothing was completed while X went down");

      // the agent's next heartbeat goes to Y. While the cluster takes over X's partitions it may be
      // answered 503 (not stored, nothing applied): the agent sends it again
      HttpResponse<Buffer> r = Await.until("Y stores the heartbeat (not 503)", 30_000,
          () -> http.send(HttpMethod.POST, y.coordinatorPort(), "/v1/nodes/" + n.id() + "/heartbeat", n.token(), report),
          resp -> resp.statusCode() != 503);
      assertEquals(200, r.statusCode(), r.bodyAsString());
      assertTrue(hasCommand(r.bodyAsJsonObject(), opId), "Y delivers the command again to the first heartbeat it answers: " + r.bodyAsString());
      String requestId = r.getHeader("X-Request-Id");

      JsonObject done = awaitOperation(opId, o -> o.getString("completed_at") != null);
      assertEquals("succeeded", done.getString("status"), done.encode());
      assertEquals(newKey, done.getJsonObject("result").getString("new_key"));
      assertEquals(delivered.getString("delivered_at"), done.getString("delivered_at"), "the delivery recorded is X's");
      assertEquals(newKey, node(n).getString("public_key"));
      // completed once, by Y, for the heartbeat Y answered
      JsonObject audit = call(a, HttpMethod.GET, "/v1/audit?action=operation.succeeded&actor_id=" + n.id(), null).bodyAsJsonObject();
      assertEquals(1, audit.getJsonArray("items").size(), audit.encode());
      JsonObject event = audit.getJsonArray("items").getJsonObject(0);
      assertEquals(opId, event.getJsonObject("target").getString("id"), event.encode());
      assertEquals(requestId, event.getString("request_id"), "the completion was written for the heartbeat sent to Y");
      // and Y stops sending it
      beatUntilNoCommand(y, n, new JsonObject().put("public_key", newKey), opId);
    }
  }
}
