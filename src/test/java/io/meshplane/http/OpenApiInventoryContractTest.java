package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The inventory's new parameters and the bulk route answer as openapi.yaml says (requests and answers validated). */
@Timeout(120)
class OpenApiInventoryContractTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static ContractCheck contract;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    contract = new ContractCheck(http, app.coordinatorPort(), http.get(app.coordinatorPort(), Meshplane.OPENAPI_PATH).bodyAsString());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  static JsonObject check(String method, String path, String bearer, String body, String query, int expect) {
    HttpResponse<Buffer> resp = contract.exchange(method, path, bearer, body, query, null);
    assertEquals(expect, resp.statusCode(), method + " " + path + "?" + query + " -> " + resp.bodyAsString());
    return resp.bodyAsJsonObject();
  }

  @Test
  void listAndBulkAnswerAsTheDocumentSays() {
    String root = cluster.admin();
    String monitoring = Tokens.issue(app, "inv", "prod", Surface.MONITORING).jwt();
    int port = app.coordinatorPort();
    Nodes.Enrolled a = Nodes.enroll(http, port, root, "inv-a", "inv", "prod");
    Nodes.Enrolled b = Nodes.enroll(http, port, root, "inv-b", "inv", "prod");
    String address = a.node().getString("address").replace("/32", "");

    for (String sort : List.of("name", "-name", "heartbeat", "-heartbeat", "status", "-status", "id")) {
      JsonObject page = check("GET", "/v1/nodes", root, null, "sort=" + sort + "&limit=1&team=inv&environment=prod", 200);
      check("GET", "/v1/nodes", root, null, "sort=" + sort + "&limit=1&cursor=" + URLEncoder.encode(page.getString("next_cursor"),
          StandardCharsets.UTF_8), 200);
    }
    assertEquals(1, check("GET", "/v1/nodes", root, null, "address=" + address, 200).getLong("total"));
    check("GET", "/v1/nodes", root, null, "address=100.64.0.0%2F10&policy_sync=behind", 200);
    check("GET", "/v1/nodes", monitoring, null, "policy_sync=drifting", 200);
    check("GET", "/v1/nodes", root, null, "address=100.64.0.1%2F10", 400);
    check("GET", "/v1/nodes", root, null, "sort=size", 400);

    String ids = new JsonArray().add(a.id()).add(b.id()).add("nd_" + "0".repeat(26)).encode();
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"retag\",\"tags\":[\"tag:x\"],\"ids\":" + ids + "}", null, 200);
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"rekey\",\"ids\":" + ids + ",\"dry_run\":true}", null, 200);
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"rekey\",\"filter\":{\"team\":\"inv\",\"tag\":\"tag:x\"}}", null, 200);
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"rekey\",\"filter\":{\"team\":\"inv\"}}", null, 200); // 409s per node
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"delete\",\"ids\":[\"" + b.id() + "\"]}", null, 200);
    check("POST", "/v1/nodes/bulk", root, "{\"action\":\"delete\"}", null, 400);
    check("POST", "/v1/nodes/bulk", monitoring, "{\"action\":\"delete\",\"ids\":[\"" + a.id() + "\"]}", null, 403);
    assertEquals(List.of(), contract.findings());
  }
}
