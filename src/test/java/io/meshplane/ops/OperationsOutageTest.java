package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import ch.qos.logback.classic.Level;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogLines;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PgProxy;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Node operations while PostgreSQL is unreachable (API.md §9, "Crash and re-delivery"):
 * heartbeats are answered from the board without waiting for the database and keep carrying the
 * command, a result reported during the outage cannot be written so the operation stays open, new
 * requests are 503, and once PostgreSQL is back the agent's next report completes the operation.
 */
@Timeout(120)
class OperationsOutageTest {
  /** A heartbeat answer during the outage must not wait for PostgreSQL. */
  static final long FAST_MS = 2000;

  @Test
  void anOperationRequestedBeforeAnOutageIsDeliveredDuringItAndCompletedAfter() throws Exception {
    try (TestCluster cluster = TestCluster.of(1); PgProxy proxy = new PgProxy(); LogLines warnings = LogLines.attach(Level.WARN)) {
      Http http = cluster.http();
      Meshplane app = cluster.start(0, cluster.db().url("127.0.0.1", proxy.port()),
          Map.of("relays", OperationsCluster.RELAYS, "writebehind.flush_interval", "200ms", "operations.deadline", "2m"));
      int port = app.coordinatorPort();
      String admin = cluster.admin();
      Nodes.Enrolled n = Nodes.enroll(http, port, admin, "outage-op", "web", "prod");
      String oldKey = n.node().getString("public_key");
      JsonObject state = new JsonObject().put("public_key", oldKey);
      assertEquals(200, beat(http, port, n, state).statusCode());

      HttpResponse<Buffer> requested = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/rekey", admin, null);
      assertEquals(202, requested.statusCode(), requested.bodyAsString());
      String opId = requested.bodyAsJsonObject().getString("id");

      proxy.cut();
      // the heartbeat is answered at once, from the board, and carries the command
      HttpResponse<Buffer> first = timedBeat(http, port, n, state);
      assertEquals(new JsonArray().add(new JsonObject().put("id", opId).put("kind", "rekey")),
          first.bodyAsJsonObject().getJsonArray("commands"), first.bodyAsString());
      // the agent re-keys and reports: answered at once although the completion cannot be written
      String newKey = Nodes.key();
      JsonObject report = new JsonObject().put("public_key", newKey).put("command_results", new JsonArray()
          .add(new JsonObject().put("id", opId).put("status", "succeeded").put("detail", "new key pair generated")));
      timedBeat(http, port, n, report);
      Await.until("the completion of " + opId + " failed during the outage", () -> !warnings.at(Level.WARN,
          m -> m.startsWith("operation " + opId + " of node " + n.id() + " not completed yet")).isEmpty());
      // the operation stays open: the command keeps coming, and the agent keeps reporting
      HttpResponse<Buffer> again = timedBeat(http, port, n, report);
      assertTrue(hasCommand(again.bodyAsJsonObject(), opId), "the command keeps coming while the completion cannot be written: "
          + again.bodyAsString());

      // what must be durable is refused: a new operation request (and reading one) is 503 unavailable
      HttpResponse<Buffer> move = http.send(HttpMethod.PUT, port, "/v1/nodes/" + n.id() + "/relay", admin,
          new JsonObject().put("relay", "ams1"));
      assertEquals(503, move.statusCode(), move.bodyAsString());
      assertEquals("unavailable", move.bodyAsJsonObject().getString("code"), move.bodyAsString());
      HttpResponse<Buffer> assign = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/ingress", admin,
          new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443));
      assertEquals(503, assign.statusCode(), assign.bodyAsString());
      assertEquals("unavailable", assign.bodyAsJsonObject().getString("code"), assign.bodyAsString());
      HttpResponse<Buffer> read = http.get(port, "/v1/operations/" + opId, admin);
      assertEquals(503, read.statusCode(), read.bodyAsString());
      assertEquals("unavailable", read.bodyAsJsonObject().getString("code"), read.bodyAsString());

      proxy.restore();
      // PostgreSQL is back (the record can be read): the result reported during the outage was not
      // written, so the operation is still open
      HttpResponse<Buffer> op = Await.until("the operation can be read again", 20_000,
          () -> http.get(port, "/v1/operations/" + opId, admin), r -> r.statusCode() == 200);
      assertEquals(200, op.statusCode(), op.bodyAsString());
      String status = op.bodyAsJsonObject().getString("status");
      assertTrue(status.equals("pending") || status.equals("delivered"), "still open after the outage: " + op.bodyAsString());

      // the agent's next report completes it
      HttpResponse<Buffer> next = timedBeat(http, port, n, report);
      assertTrue(hasCommand(next.bodyAsJsonObject(), opId), "the command still comes: " + next.bodyAsString());
      JsonObject done = await(http, port, admin, opId);
      assertEquals("succeeded", done.getString("status"), done.encode());
      assertEquals(newKey, done.getJsonObject("result").getString("new_key"), done.encode());
      assertNotNull(done.getString("delivered_at"), done.encode());
      assertEquals(newKey, http.get(port, "/v1/nodes/" + n.id(), admin).bodyAsJsonObject().getString("public_key"));
      // completed once (the reports during the outage wrote nothing), and the command stops
      JsonObject audit = http.get(port, "/v1/audit?action=operation.succeeded&actor_id=" + n.id(), admin).bodyAsJsonObject();
      assertEquals(1, audit.getJsonArray("items").size(), audit.encode());
      Await.until("the command stops", () -> beat(http, port, n, new JsonObject().put("public_key", newKey)).bodyAsJsonObject(),
          after -> !hasCommand(after, opId));
      // and requests are accepted again
      HttpResponse<Buffer> moved = http.send(HttpMethod.PUT, port, "/v1/nodes/" + n.id() + "/relay", admin,
          new JsonObject().put("relay", "ams1"));
      assertTrue(moved.statusCode() == 202 || moved.statusCode() == 409, moved.bodyAsString());
    }
  }

  static HttpResponse<Buffer> beat(Http http, int port, Nodes.Enrolled n, JsonObject body) {
    return http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
  }

  /** A heartbeat that must be answered 200 within {@link #FAST_MS}. */
  static HttpResponse<Buffer> timedBeat(Http http, int port, Nodes.Enrolled n, JsonObject body) {
    long t0 = System.nanoTime();
    HttpResponse<Buffer> r = beat(http, port, n, body);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertTrue(ms < FAST_MS, "the heartbeat waited " + ms + " ms");
    return r;
  }

  static boolean hasCommand(JsonObject answer, String opId) {
    for (Object c : answer.getJsonArray("commands")) if (((JsonObject) c).getString("id").equals(opId)) return true;
    return false;
  }

  static JsonObject await(Http http, int port, String admin, String opId) {
    return Await.until(opId + " completed", 20_000, () -> http.get(port, "/v1/operations/" + opId, admin).bodyAsJsonObject(),
        op -> op.getValue("completed_at") != null);
  }
}
