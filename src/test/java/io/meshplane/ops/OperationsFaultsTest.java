package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import ch.qos.logback.classic.Level;
import io.meshplane.testing.Await;
import io.meshplane.testing.LogLines;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PgProxy;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Node operations when something goes wrong, over real HTTP, two replicas and PostgreSQL: agents
 * that claim what their heartbeat contradicts, results that are not theirs, and a delivering replica that dies.
 */
@Timeout(300)
class OperationsFaultsTest extends OperationsCluster {

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
