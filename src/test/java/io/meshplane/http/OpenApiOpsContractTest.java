package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The node-operation routes (services, ingress, rekey, relay move, drain, the operation records) and
 * the heartbeat answers and records they shape, against the OpenAPI document: every request and
 * answer, successes and refusals, validated with the same validator as {@link OpenApiContractTest},
 * each with the status it must have. One replica, two relays, a short {@code operations.deadline}
 * and {@code nodes.pending_ttl} so that an expiry and an unconfirmed enrollment happen within the test.
 */
@Timeout(120)
class OpenApiOpsContractTest {
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";
  static final String UNKNOWN_NODE = "nd_01m8000000000000000000000z";
  static final String UNKNOWN_OP = "op_01m8000000000000000000000z";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("relays", RELAYS, "writebehind.flush_interval", "100ms",
        "operations.deadline", "6s", "nodes.pending_ttl", "1s"));
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    String spec = http.get(port, Meshplane.OPENAPI_PATH).bodyAsString();
    contract = new ContractCheck(http, port, spec);
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void everyOperationRouteAnswersAsTheDocumentSays() throws Exception {
    String root = cluster.admin();
    String monitoring = Tokens.issue(app, "ops", "prod", Surface.MONITORING).jwt();

    // a node that beats (edge-1) and one that never does (silent-1: its re-key expires, its enrollment is unconfirmed)
    JsonObject e1 = check("POST", "/v1/nodes", root, new JsonObject().put("name", "edge-1").put("public_key", Nodes.key()).put("team", "ops")
        .put("environment", "prod").put("tags", new JsonArray().add("tag:edge")).put("region", "eu").encode(), null, 201);
    JsonObject e2 = check("POST", "/v1/nodes", root, new JsonObject().put("name", "silent-1").put("public_key", Nodes.key()).put("team", "ops")
        .put("environment", "prod").put("region", "eu").encode(), null, 201);
    String edge = e1.getJsonObject("node").getString("id");
    String agent = e1.getJsonObject("credential").getString("token");
    String oldKey = e1.getJsonObject("node").getString("public_key");
    String from = e1.getJsonObject("node").getString("relay");
    String to = from.equals("fra1") ? "ams1" : "fra1";
    String silent = e2.getJsonObject("node").getString("id");
    String expiring = check("POST", "/v1/nodes/" + silent + "/rekey", root, null, null, 202).getString("id");

    JsonObject state = new JsonObject().put("public_key", oldKey).put("relay", from).put("services", new JsonArray().add("ssh:22"));
    check("POST", "/v1/nodes/" + edge + "/heartbeat", agent, state.encode(), null, 200);

    // services
    JsonObject bound = check("PUT", "/v1/nodes/" + edge + "/services", root,
        "{\"services\":[\"ssh:22\",\"web:8080\",\"ssh:22\"]}", null, 200);
    assertEquals(new JsonArray().add("ssh:22").add("web:8080"), bound.getJsonArray("services"));
    assertEquals("behind", bound.getJsonObject("policy_sync").getString("services"), bound.encode());
    check("PUT", "/v1/nodes/" + edge + "/services", root, "{\"services\":[\"ssh:0\"],\"extra\":1}", null, 400);
    check("PUT", "/v1/nodes/" + edge + "/services", root, null, null, 400); // no body
    check("PUT", "/v1/nodes/" + UNKNOWN_NODE + "/services", root, "{\"services\":[]}", null, 404);
    check("PUT", "/v1/nodes/" + edge + "/services", monitoring, "{\"services\":[]}", null, 403);

    // ingress
    String web = new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443).encode();
    check("POST", "/v1/nodes/" + edge + "/ingress", root, web, null, 201);
    check("POST", "/v1/nodes/" + edge + "/ingress", root,
        new JsonObject().put("name", "api").put("hostname", "api.example.net").put("port", 8443).encode(), null, 201);
    check("POST", "/v1/nodes/" + edge + "/ingress", root, web, null, 409); // the name is taken
    check("POST", "/v1/nodes/" + edge + "/ingress", root, "{\"name\":\"x\",\"hostname\":\"bad host\",\"port\":70000}", null, 400);
    check("POST", "/v1/nodes/" + UNKNOWN_NODE + "/ingress", root, web, null, 404);

    // operations: a re-key, a relay move, a drain
    String rekey = check("POST", "/v1/nodes/" + edge + "/rekey", root, null, null, 202).getString("id");
    check("POST", "/v1/nodes/" + edge + "/rekey", root, "{}", null, 409); // one open re-key
    check("POST", "/v1/nodes/" + edge + "/rekey", root, "{\"force\":true}", null, 409); // unknown fields are ignored (API.md §1)
    check("POST", "/v1/nodes/" + edge + "/rekey", root, "[]", null, 400); // but a body is a JSON object
    check("POST", "/v1/nodes/" + UNKNOWN_NODE + "/rekey", root, null, null, 404);
    check("PUT", "/v1/nodes/" + edge + "/relay", root, "{\"relay\":\"nowhere\"}", null, 400);
    check("PUT", "/v1/nodes/" + edge + "/relay", root, "{\"relay\":\"" + from + "\"}", null, 409); // already there
    JsonObject move = check("PUT", "/v1/nodes/" + edge + "/relay", root, "{\"relay\":\"" + to + "\"}", null, 202);
    assertEquals(new JsonObject().put("relay", to).put("from", from), move.getJsonObject("target"));
    check("PUT", "/v1/nodes/" + edge + "/relay", root, "{\"relay\":\"" + from + "\"}", null, 409); // a move is open
    check("PUT", "/v1/nodes/" + UNKNOWN_NODE + "/relay", root, "{\"relay\":\"" + to + "\"}", null, 404);
    String drain = check("POST", "/v1/nodes/" + edge + "/ingress/web/drain", root, null, null, 202).getString("id");
    check("POST", "/v1/nodes/" + edge + "/ingress/api/drain", root, null, null, 409); // one open drain per node
    check("POST", "/v1/nodes/" + edge + "/ingress/nope/drain", root, null, null, 404);
    check("POST", "/v1/nodes/" + edge + "/ingress/web/drain", monitoring, null, null, 403);
    JsonObject moving = check("GET", "/v1/nodes/" + edge, root, null, null, 200);
    assertEquals("moving", moving.getString("relay_status"));
    assertEquals("draining", moving.getJsonArray("ingress").getJsonObject(0).getString("state"));

    // the heartbeat answer carries services, ingress and the three commands (the answering replica made the changes)
    JsonObject answer = check("POST", "/v1/nodes/" + edge + "/heartbeat", agent, state.encode(), null, 200);
    assertEquals(3, answer.getJsonArray("commands").size(), answer.encode());
    assertEquals(new JsonArray().add("ssh:22").add("web:8080"), answer.getJsonArray("services"));
    check("GET", "/v1/operations/" + rekey, root, null, null, 200);

    // the agent carries them out and reports; the same heartbeat shows the effects
    String newKey = Nodes.key();
    JsonObject done = new JsonObject().put("public_key", newKey).put("relay", to).put("services", new JsonArray().add("web:8080").add("ssh:22"))
        .put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "drained"))
            .add(new JsonObject().put("name", "api").put("state", "active")))
        .put("command_results", new JsonArray().add(result(rekey, "succeeded")).add(result(move.getString("id"), "succeeded"))
            .add(result(drain, "succeeded")).add(result(UNKNOWN_OP, "failed")));
    check("POST", "/v1/nodes/" + edge + "/heartbeat", agent, done.encode(), null, 200);
    for (String op : List.of(rekey, move.getString("id"), drain)) {
      assertEquals("succeeded", await(op, o -> o.getString("completed_at") != null).getString("status"), op);
    }
    assertEquals(newKey, check("GET", "/v1/operations/" + rekey, root, null, null, 200).getJsonObject("result").getString("new_key"));
    check("GET", "/v1/operations/" + drain, root, null, null, 200);
    JsonObject record = check("GET", "/v1/nodes/" + edge, root, null, null, 200);
    assertEquals("connected", record.getString("relay_status"));
    assertEquals("drained", record.getJsonArray("ingress").getJsonObject(0).getString("state"));
    assertEquals("current", record.getJsonObject("policy_sync").getString("services"), record.encode());
    check("POST", "/v1/nodes/" + edge + "/ingress/web/drain", root, "{}", null, 409); // drained already
    check("POST", "/v1/nodes/" + edge + "/ingress", root, web, null, 201); // replaces the drained one

    // an agent whose heartbeat contradicts its success: failed, with what it said
    String lie = check("POST", "/v1/nodes/" + edge + "/rekey", root, "{}", null, 202).getString("id");
    JsonObject same = done.copy().put("command_results", new JsonArray().add(result(lie, "succeeded")));
    check("POST", "/v1/nodes/" + edge + "/heartbeat", agent, same.encode(), null, 200);
    assertEquals("failed", await(lie, o -> o.getString("completed_at") != null).getString("status"));
    check("GET", "/v1/operations/" + lie, root, null, null, 200);
    check("POST", "/v1/nodes/" + edge + "/heartbeat", agent,
        "{\"command_results\":[{\"id\":\"" + lie + "\",\"status\":\"done\"},{\"id\":\"nd_x\",\"status\":\"failed\"}]}", null, 400);

    // the records
    check("GET", "/v1/nodes/" + edge + "/operations", root, null, null, 200);
    JsonObject page = check("GET", "/v1/nodes/" + edge + "/operations", root, null, "limit=2", 200);
    assertNotNull(page.getString("next_cursor"));
    check("GET", "/v1/nodes/" + edge + "/operations", root, null, "limit=2&cursor=" + page.getString("next_cursor"), 200);
    assertEquals(1, check("GET", "/v1/nodes/" + edge + "/operations", root, null, "status=failed", 200).getJsonArray("items").size());
    check("GET", "/v1/nodes/" + edge + "/operations", root, null, "status=done", 400);
    check("GET", "/v1/nodes/" + edge + "/operations", root, null, "cursor=forged", 400);
    check("GET", "/v1/nodes/" + UNKNOWN_NODE + "/operations", root, null, null, 404);
    check("GET", "/v1/nodes/" + edge + "/operations", monitoring, null, "limit=1", 200);
    // the fleet's list, newest first, filtered and paged
    JsonObject fleet = check("GET", "/v1/operations", root, null, null, 200);
    assertEquals(lie, fleet.getJsonArray("items").getJsonObject(0).getString("id"), fleet.encode());
    JsonObject two = check("GET", "/v1/operations", root, null, "kind=rekey,move_relay&status=succeeded,failed,open&limit=2", 200);
    check("GET", "/v1/operations", root, null, "kind=rekey&limit=2&cursor=" + two.getString("next_cursor"), 200);
    check("GET", "/v1/operations", root, null, "node_id=" + edge + "&since=2026-01-01T00:00:00Z&until=2126-01-01T00:00:00Z", 200);
    check("GET", "/v1/operations", monitoring, null, "status=open", 200);
    check("GET", "/v1/operations", root, null, "status=done", 400);
    check("GET", "/v1/operations", root, null, "kind=reboot", 400);
    check("GET", "/v1/operations", root, null, "until=yesterday", 400);
    check("GET", "/v1/operations", root, null, "cursor=" + page.getString("next_cursor"), 400); // a node's list's cursor
    check("GET", "/v1/operations", agent, null, null, 403);
    check("GET", "/v1/operations/" + UNKNOWN_OP, root, null, null, 404);
    check("GET", "/v1/operations/" + rekey, agent, null, null, 403);

    // the silent node's re-key expires undelivered; its enrollment is reported unconfirmed
    JsonObject expired = await(expiring, o -> o.getString("completed_at") != null);
    assertEquals("expired", expired.getString("status"), expired.encode());
    assertNull(expired.getString("delivered_at"));
    check("GET", "/v1/operations/" + expiring, root, null, null, 200);
    check("GET", "/v1/nodes/" + silent + "/operations", root, null, "status=expired", 200);
    JsonObject events = Await.until("the silent enrollment reported", 10_000,
        () -> check("GET", "/v1/events", root, null, "type=node.enroll_unconfirmed&node_id=" + silent, 200),
        e -> !e.getJsonArray("items").isEmpty());
    assertEquals(1, events.getJsonArray("items").size(), events.encode());

    // the audit trail: requests, completions (by the node, by the coordinator), denials
    JsonObject audit = check("GET", "/v1/audit", root, null, "limit=100", 200);
    List<String> actions = audit.getJsonArray("items").stream().map(e -> ((JsonObject) e).getString("action")).toList();
    for (String a : List.of("node.services", "node.ingress", "node.rekey", "node.move_relay", "node.drain_ingress", "operation.succeeded",
        "operation.failed", "operation.expired")) {
      assertTrue(actions.contains(a), a + " in " + actions);
    }
    check("GET", "/v1/audit", root, null, "action=operation.expired", 200);
    check("GET", "/v1/nodes", root, null, null, 200);
    assertEquals(List.of(), contract.findings());
  }

  static JsonObject result(String opId, String status) {
    return new JsonObject().put("id", opId).put("status", status).put("detail", "done by the test agent");
  }

  /** Polls an operation (without validating each read) until {@code done} holds, 15 s at most. */
  static JsonObject await(String opId, Predicate<JsonObject> done) {
    String root = cluster.admin();
    return Await.until("operation " + opId + " reaches the awaited state", 15_000,
        () -> http.get(port, "/v1/operations/" + opId, root).bodyAsJsonObject(), done);
  }

  /** Sends, validates against the document, and checks the status. */
  private static JsonObject check(String method, String path, String bearer, String body, String query, int expect) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, null);
    assertEquals(expect, resp.statusCode(), method + " " + path + " -> " + resp.bodyAsString());
    String type = resp.getHeader("Content-Type");
    return type != null && type.contains("json") ? resp.bodyAsJsonObject() : null;
  }
}
