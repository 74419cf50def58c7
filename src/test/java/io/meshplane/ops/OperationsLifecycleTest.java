package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Nodes;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Node operations end to end over real HTTP, two replicas and PostgreSQL: each kind of operation's
 * lifecycle as seen in heartbeats and in the records (re-key, relay move, ingress, services), an
 * operation a stale node does not receive, and an enrollment that never heartbeats.
 */
@Timeout(300)
class OperationsLifecycleTest extends OperationsCluster {

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

  @Test
  void aDrainCarriesItsGraceAndTheAgentsEvidenceDecidesIt() throws Exception {
    Nodes.Enrolled n = enroll("edge-grace", "edges", "tag:edge");
    JsonObject ingress = new JsonObject().put("name", "web").put("hostname", "grace.example.net").put("port", 443);
    assertEquals(201, call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress", ingress).statusCode());
    for (Object bad : new Object[] {0, 3601, 1.5, "60"}) {
      HttpResponse<Buffer> r = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", new JsonObject().put("grace_s", bad));
      assertEquals(400, r.statusCode(), bad + ": " + r.bodyAsString());
      assertEquals("grace_s", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    }
    HttpResponse<Buffer> r = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", new JsonObject().put("grace_s", 30));
    assertEquals(202, r.statusCode(), r.bodyAsString());
    String opId = r.bodyAsJsonObject().getString("id");
    assertEquals(new JsonObject().put("name", "web").put("grace_s", 30), r.bodyAsJsonObject().getJsonObject("target"));
    JsonObject active = new JsonObject().put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "active")));
    JsonObject answer = beatUntilCommand(a, n, active, opId);
    assertEquals(new JsonObject().put("id", opId).put("kind", "drain_ingress").put("name", "web").put("grace_s", 30),
        answer.getJsonArray("commands").getJsonObject(0));
    // a success whose evidence shows connections still open is a failure; the ingress goes back to active
    JsonObject lie = result(opId, "succeeded");
    lie.getJsonArray("command_results").getJsonObject(0).put("detail", "drained with evidence {\"open_connections\":2,\"requests_during_drain\":5}");
    beat(a, n, lie.put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "drained"))));
    JsonObject failed = awaitOperation(opId, o -> o.getString("completed_at") != null);
    assertEquals("failed", failed.getString("status"), failed.encode());
    assertEquals(new JsonObject().put("open_connections", 2).put("requests_during_drain", 5), failed.getJsonObject("result").getJsonObject("evidence"));
    assertTrue(failed.getJsonObject("result").getString("detail").contains("2 connections still open"), failed.encode());
    assertEquals("active", node(n).getJsonArray("ingress").getJsonObject(0).getString("state"));

    // drained with no connection left: succeeded, the evidence kept in the result
    String again = call(a, HttpMethod.POST, "/v1/nodes/" + n.id() + "/ingress/web/drain", null).bodyAsJsonObject().getString("id");
    beatUntilCommand(a, n, active, again);
    JsonObject honest = result(again, "succeeded");
    honest.getJsonArray("command_results").getJsonObject(0).put("detail", "drained with evidence {\"open_connections\":0,\"requests_during_drain\":7}");
    beat(a, n, honest.put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "drained"))));
    JsonObject done = awaitOperation(again, o -> o.getString("completed_at") != null);
    assertEquals("succeeded", done.getString("status"), done.encode());
    assertEquals(new JsonObject().put("open_connections", 0).put("requests_during_drain", 7), done.getJsonObject("result").getJsonObject("evidence"));
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
}
