package io.meshplane.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A public ingress hostname is held by one ingress of the whole mesh, whatever its team and
 * environment (API.md §9): another team asking for it gets a 409 that names nobody, the same 409 as
 * inside one team, audited as a denial; PostgreSQL decides a race; a drain, a replacement or the
 * node's deletion gives the hostname back.
 */
@Timeout(180)
class IngressHostnamesTest {
  static LogCapture logs;
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static String admin;
  static String alpha;
  static String beta;

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    port = app.coordinatorPort();
    admin = cluster.admin();
    alpha = Tokens.issue(app, "alpha", "prod", Surface.OPERATOR).jwt();
    beta = Tokens.issue(app, "beta", "prod", Surface.OPERATOR).jwt();
  }

  @AfterAll
  static void stop() {
    try {
      if (cluster != null) cluster.close();
    } finally {
      if (logs != null) logs.close();
    }
  }

  static HttpResponse<Buffer> assign(String token, Nodes.Enrolled n, String name, String hostname) {
    return http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/ingress", token,
        new JsonObject().put("name", name).put("hostname", hostname).put("port", 443));
  }

  static JsonObject withoutRequestId(HttpResponse<Buffer> r) {
    JsonObject body = r.bodyAsJsonObject().copy();
    body.remove("request_id");
    return body;
  }

  @Test
  void aHostnameHeldInAnotherTeamIsARefusalThatNamesNobodyAndIsAudited() throws SQLException {
    Nodes.Enrolled a1 = Nodes.enroll(http, port, admin, "a-edge-1", "alpha", "prod");
    Nodes.Enrolled a2 = Nodes.enroll(http, port, admin, "a-edge-2", "alpha", "prod");
    Nodes.Enrolled b1 = Nodes.enroll(http, port, admin, "b-edge-1", "beta", "prod");
    assertEquals(201, assign(alpha, a1, "web", "web.example.net").statusCode());

    HttpResponse<Buffer> other = assign(beta, b1, "web", "web.example.net");
    assertEquals(409, other.statusCode(), other.bodyAsString());
    JsonObject problem = other.bodyAsJsonObject();
    assertEquals("conflict", problem.getString("code"));
    for (String secret : List.of(a1.id(), a1.name(), "alpha")) {
      assertFalse(other.bodyAsString().contains(secret), "the refusal names " + secret + ": " + other.bodyAsString());
    }
    assertEquals(new JsonArray(), b1Ingress(b1), "nothing was assigned");

    // the same answer, word for word, when the holder is in the caller's own team (another node, or the same node)
    HttpResponse<Buffer> sameTeam = assign(alpha, a2, "web", "web.example.net");
    assertEquals(409, sameTeam.statusCode());
    assertEquals(withoutRequestId(other), withoutRequestId(sameTeam));
    HttpResponse<Buffer> sameNode = assign(alpha, a1, "www", "web.example.net");
    assertEquals(409, sameNode.statusCode());
    assertEquals(withoutRequestId(other), withoutRequestId(sameNode));

    // on the record as a denial of the caller, in the caller's own team; never as a success
    List<JsonObject> betaTrail = trail(beta, b1, a1, a2);
    assertEquals(1, betaTrail.size(), "beta sees its own attempt only: " + betaTrail);
    JsonObject denied = betaTrail.get(0);
    assertEquals("denied", denied.getString("outcome"));
    assertEquals(new JsonObject().put("type", "node").put("id", b1.id()).put("name", (String) null), denied.getJsonObject("target"));
    assertEquals("beta", denied.getString("team"));
    List<String> alphaOutcomes = new ArrayList<>(trail(alpha, b1, a1, a2).stream().map(e -> e.getString("outcome")).toList());
    alphaOutcomes.sort(null);
    assertEquals(List.of("denied", "denied", "success"), alphaOutcomes, "alpha sees its own attempts only");

    // the database holds the rule: one row per lower-cased hostname
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      assertThrows(SQLException.class, () -> st.execute("INSERT INTO ingress_hostnames (hostname, node_id, ingress) VALUES ('web.example.net', '"
          + b1.id() + "', 'x')"));
      assertThrows(SQLException.class, () -> st.execute("INSERT INTO ingress_hostnames (hostname, node_id, ingress) VALUES ('Web.Example.net', '"
          + b1.id() + "', 'x')"));
    }
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace for a refusal");
  }

  @Test
  void aDrainAReplacementOrTheNodesDeletionGivesTheHostnameBack() throws Exception {
    Nodes.Enrolled a = Nodes.enroll(http, port, admin, "a-shop", "alpha", "prod");
    Nodes.Enrolled b = Nodes.enroll(http, port, admin, "b-shop", "beta", "prod");
    assertEquals(201, assign(alpha, a, "shop", "shop.example.net").statusCode());
    assertEquals(409, assign(beta, b, "shop", "shop.example.net").statusCode());
    HttpResponse<Buffer> draining = http.send(HttpMethod.POST, port, "/v1/nodes/" + a.id() + "/ingress/shop/drain", alpha, null);
    assertEquals(202, draining.statusCode(), draining.bodyAsString());
    assertEquals(409, assign(beta, b, "shop", "shop.example.net").statusCode(), "a draining ingress still holds its hostname");
    drained(a, draining.bodyAsJsonObject().getString("id"), "shop");
    // drained: the node may take it back under the same name (a replacement) ...
    assertEquals(201, assign(alpha, a, "shop", "shop.example.net").statusCode());
    assertEquals(409, assign(beta, b, "shop", "shop.example.net").statusCode());
    // ... and once drained again and replaced by another hostname, anyone may have it
    String second = http.send(HttpMethod.POST, port, "/v1/nodes/" + a.id() + "/ingress/shop/drain", alpha, null).bodyAsJsonObject()
        .getString("id");
    drained(a, second, "shop");
    assertEquals(201, assign(alpha, a, "shop", "shop2.example.net").statusCode());
    assertEquals(201, assign(beta, b, "shop", "shop.example.net").statusCode());

    Nodes.Enrolled gone = Nodes.enroll(http, port, admin, "a-gone", "alpha", "prod");
    assertEquals(201, assign(alpha, gone, "web", "gone.example.net").statusCode());
    assertEquals(409, assign(beta, b, "gone", "gone.example.net").statusCode());
    assertEquals(204, http.send(HttpMethod.DELETE, port, "/v1/nodes/" + gone.id(), alpha, null).statusCode());
    assertEquals(201, assign(beta, b, "gone", "gone.example.net").statusCode(), "a deleted node holds nothing");
  }

  @Test
  void twoAssignmentsOfOneHostnameAtOnceGiveOne201AndOne409() {
    Nodes.Enrolled a = Nodes.enroll(http, port, admin, "a-race", "alpha", "prod");
    Nodes.Enrolled b = Nodes.enroll(http, port, admin, "b-race", "beta", "prod");
    for (int i = 0; i < 12; i++) {
      JsonObject body = new JsonObject().put("name", "race" + i).put("hostname", "race" + i + ".example.net").put("port", 443);
      Future<HttpResponse<Buffer>> fromA = http.sendAsync(HttpMethod.POST, port, "/v1/nodes/" + a.id() + "/ingress", alpha, body);
      Future<HttpResponse<Buffer>> fromB = http.sendAsync(HttpMethod.POST, port, "/v1/nodes/" + b.id() + "/ingress", beta, body);
      List<Integer> statuses = new ArrayList<>(List.of(Http.await(fromA, 20).statusCode(), Http.await(fromB, 20).statusCode()));
      statuses.sort(null);
      assertEquals(List.of(201, 409), statuses, "round " + i);
    }
    assertEquals(List.of(), logs.problems(), "a lost race is a 409, not a 500");
  }

  private static JsonArray b1Ingress(Nodes.Enrolled n) {
    return http.get(port, "/v1/nodes/" + n.id(), admin).bodyAsJsonObject().getJsonArray("ingress");
  }

  /** The {@code node.ingress} events that {@code token} may read, of these nodes. */
  private static List<JsonObject> trail(String token, Nodes.Enrolled... nodes) {
    List<String> ids = java.util.Arrays.stream(nodes).map(Nodes.Enrolled::id).toList();
    JsonArray items = http.get(port, "/v1/audit?action=node.ingress&limit=1000", token).bodyAsJsonObject().getJsonArray("items");
    List<JsonObject> out = new ArrayList<>();
    for (Object o : items) {
      JsonObject e = (JsonObject) o;
      if (e.getJsonObject("target") != null && ids.contains(e.getJsonObject("target").getString("id"))) out.add(e);
    }
    return out;
  }

  /** The agent's side of a drain: beats until the command comes, reports it done with the ingress drained, waits for the completion. */
  private static void drained(Nodes.Enrolled n, String opId, String name) {
    Await.until("the drain " + opId + " delivered", 20_000, () -> beat(n, new JsonObject()),
        answer -> answer.getJsonArray("commands").stream().anyMatch(c -> opId.equals(((JsonObject) c).getString("id"))));
    beat(n, new JsonObject().put("ingress", new JsonArray().add(new JsonObject().put("name", name).put("state", "drained")))
        .put("command_results", new JsonArray().add(new JsonObject().put("id", opId).put("status", "succeeded"))));
    Await.until("the drain " + opId + " succeeded", 20_000,
        () -> http.get(port, "/v1/operations/" + opId, admin).bodyAsJsonObject().getString("status"), "succeeded"::equals);
  }

  private static JsonObject beat(Nodes.Enrolled n, JsonObject body) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }
}
