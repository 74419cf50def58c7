package io.meshplane.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
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
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What ties ingress routes (API.md §19) to the nodes of the mesh: a hostname belongs to one team in
 * both directions (another team's routes keep a node ingress of §9 off it, another team's node
 * ingress keeps routes off it; the team itself may use it in both places), races between the two
 * included; and a route's {@code status}, read with the route, follows its target node's deletion and
 * its service's unbinding and rebinding, while the route itself is kept.
 */
@Timeout(180)
class IngressHostnameTargetTest {
  static LogCapture logs;
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static String admin;

  @BeforeAll
  static void start() {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    port = app.coordinatorPort();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    try {
      if (cluster != null) cluster.close();
    } finally {
      if (logs != null) logs.close();
    }
  }

  /** A team's edge (tag:edge) and web (tag:web, web:8080 bound) nodes, a policy letting tag:edge reach them, and an operator token. */
  record Team(String team, Nodes.Enrolled edge, Nodes.Enrolled web, String op) {}

  static Team team(String team) {
    Nodes.Enrolled edge = IngressRoutesTest.enrollVia(http, port, admin, team + "-edge", team, "tag:edge");
    Nodes.Enrolled web = IngressRoutesTest.enrollVia(http, port, admin, team + "-web", team, "tag:web");
    bind(web, "web:8080");
    HttpResponse<Buffer> p = http.send(HttpMethod.PUT, port, "/v1/acl?team=" + team + "&environment=prod", admin,
        new JsonObject().put("grants", new JsonArray().add(IngressRoutesTest.grant("tag:edge", "tag:web", "tcp/8080"))));
    assertEquals(200, p.statusCode(), p.bodyAsString());
    return new Team(team, edge, web, Tokens.issue(app, team, "prod", Surface.OPERATOR).jwt());
  }

  static void bind(Nodes.Enrolled n, String... services) {
    HttpResponse<Buffer> r = http.send(HttpMethod.PUT, port, "/v1/nodes/" + n.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray(List.of((Object[]) services))));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  static JsonObject route(Team t, String hostname) {
    return new JsonObject().put("team", t.team()).put("environment", "prod").put("hostname", hostname).put("path_prefix", "/")
        .put("target", new JsonObject().put("node", t.web().id()).put("service", "web")).put("exposure", "public").put("tls", "acme")
        .put("ingress_tag", "tag:edge");
  }

  static HttpResponse<Buffer> createRoute(Team t, JsonObject body) {
    return http.send(HttpMethod.POST, port, "/v1/ingress/routes", t.op(), body);
  }

  static HttpResponse<Buffer> assign(Team t, String name, String hostname) {
    return http.send(HttpMethod.POST, port, "/v1/nodes/" + t.edge().id() + "/ingress", t.op(),
        new JsonObject().put("name", name).put("hostname", hostname).put("port", 443));
  }

  static void assertHostnameTaken(HttpResponse<Buffer> r, String holder) {
    assertEquals(409, r.statusCode(), r.bodyAsString());
    JsonObject problem = r.bodyAsJsonObject();
    assertEquals("hostname_taken", problem.getString("code"));
    assertEquals(1, problem.getJsonArray("errors").size(), r.bodyAsString());
    assertEquals("hostname", problem.getJsonArray("errors").getJsonObject(0).getString("field"));
    assertFalse(r.bodyAsString().contains(holder), "the refusal names the holder: " + r.bodyAsString());
  }

  /**
   * A wildcard holds the names one label under it, both ways and against node ingress: another team
   * can neither route nor assign a name under it, nor take a wildcard over its names; names two labels
   * under, the wildcard's own parent and the same team are not held.
   */
  @Test
  void aWildcardHoldsTheNamesOneLabelUnderItAcrossTeams() {
    Team east = team("wildeast");
    Team west = team("wildwest");
    assertEquals(201, createRoute(east, route(east, "*.wild.example.com")).statusCode());
    assertHostnameTaken(createRoute(west, route(west, "shop.wild.example.com")), "wildeast");
    assertHostnameTaken(assign(west, "web", "shop.wild.example.com"), "wildeast");
    assertEquals(201, createRoute(west, route(west, "a.b.wild.example.com")).statusCode(), "two labels under: not held");
    assertEquals(201, createRoute(west, route(west, "wild.example.com")).statusCode(), "the parent itself: not held");
    assertEquals(201, createRoute(east, route(east, "shop.wild.example.com")).statusCode(), "the wildcard's own team");

    // the other way round: west's names (a route, a node ingress) keep east's wildcard out
    assertEquals(201, createRoute(west, route(west, "api.west.example.com")).statusCode());
    assertHostnameTaken(createRoute(east, route(east, "*.west.example.com")), "wildwest");
    assertEquals(201, assign(west, "web", "node.other.example.com").statusCode());
    assertHostnameTaken(createRoute(east, route(east, "*.other.example.com")), "wildwest");
    assertEquals(201, createRoute(east, route(east, "*.quiet.example.net")).statusCode(), "nothing of west's under it");
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace for a refusal");
  }

  @Test
  void aHostnameBelongsToOneTeamAcrossRoutesAndNodeIngress() {
    Team north = team("north");
    Team south = team("south");

    // north routes routed.example.com: south's node cannot take it as an ingress, and nothing changes
    assertEquals(201, createRoute(north, route(north, "routed.example.com")).statusCode());
    assertHostnameTaken(assign(south, "web", "routed.example.com"), "north");
    assertEquals(new JsonArray(), http.get(port, "/v1/nodes/" + south.edge().id(), admin).bodyAsJsonObject().getJsonArray("ingress"));
    // audited as a denial of south, on south's node, in south's team
    JsonArray trail = http.get(port, "/v1/audit?action=node.ingress&limit=100", south.op()).bodyAsJsonObject().getJsonArray("items");
    assertEquals(1, trail.size(), trail.encode());
    assertEquals("denied", trail.getJsonObject(0).getString("outcome"));
    assertEquals(south.edge().id(), trail.getJsonObject(0).getJsonObject("target").getString("id"));
    assertEquals("south", trail.getJsonObject(0).getString("team"));
    // the same team may put its own routed hostname on its node (the hostname is the team's), and then
    // the node ingress holds it mesh-wide as before: south is refused by either rule
    assertEquals(201, assign(north, "web", "routed.example.com").statusCode());
    assertEquals(409, assign(south, "web", "routed.example.com").statusCode());

    // the other way round: north's node holds held.example.com, south's route is refused, north's is stored
    assertEquals(201, assign(north, "api", "held.example.com").statusCode());
    assertHostnameTaken(createRoute(south, route(south, "held.example.com")), "north");
    assertEquals(0, http.get(port, "/v1/ingress/routes?team=south&environment=prod", admin).bodyAsJsonObject().getJsonArray("items").size());
    assertEquals(201, createRoute(north, route(north, "held.example.com")).statusCode());
    // and a replace of south's own route onto it is refused the same way
    JsonObject own = createRoute(south, route(south, "south.example.com")).bodyAsJsonObject();
    HttpResponse<Buffer> onto = http.send(HttpMethod.PUT, port, "/v1/ingress/routes/" + own.getString("id"), south.op(),
        route(south, "held.example.com"));
    assertHostnameTaken(onto, "north");
    assertEquals("south.example.com", http.get(port, "/v1/ingress/routes/" + own.getString("id"), south.op()).bodyAsJsonObject()
        .getString("hostname"));
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace for a refusal");
  }

  @Test
  void aRouteAndANodeIngressOfOneHostnameAtOnceByTwoTeamsNeverBothWin() {
    Team east = team("east");
    Team west = team("west");
    for (int i = 0; i < 10; i++) {
      String host = "race" + i + ".example.org";
      Future<HttpResponse<Buffer>> route = http.sendAsync(HttpMethod.POST, port, "/v1/ingress/routes", east.op(), route(east, host));
      Future<HttpResponse<Buffer>> node = http.sendAsync(HttpMethod.POST, port, "/v1/nodes/" + west.edge().id() + "/ingress", west.op(),
          new JsonObject().put("name", "race" + i).put("hostname", host).put("port", 443));
      List<Integer> statuses = new ArrayList<>(List.of(Http.await(route, 30).statusCode(), Http.await(node, 30).statusCode()));
      statuses.sort(null);
      assertEquals(List.of(201, 409), statuses, "round " + i);
    }
    assertEquals(List.of(), logs.problems(), "a lost race is a 409, never a deadlock's 500");
  }

  static String state(JsonObject route) {
    return route.getJsonObject("status").getString("state");
  }

  /** The route's state as GET one and the team's list (one statement) show it; both must agree. */
  static String stateRead(Team t, String id) {
    HttpResponse<Buffer> one = http.get(port, "/v1/ingress/routes/" + id, t.op());
    assertEquals(200, one.statusCode(), "the route is kept: " + one.bodyAsString());
    JsonArray items = http.get(port, "/v1/ingress/routes?team=" + t.team() + "&environment=prod", t.op()).bodyAsJsonObject()
        .getJsonArray("items");
    String listed = items.stream().map(o -> (JsonObject) o).filter(r -> r.getString("id").equals(id)).map(IngressHostnameTargetTest::state)
        .findFirst().orElseThrow();
    assertEquals(state(one.bodyAsJsonObject()), listed, "GET one and the list agree");
    return listed;
  }

  /** The edge node's heartbeat answer's routes. */
  static JsonArray served(Team t) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + t.edge().id() + "/heartbeat", t.edge().token(), new JsonObject());
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonObject("ingress_routes").getJsonArray("routes");
  }

  @Test
  void aRoutesStatusFollowsItsTargetAndTheRouteIsKeptWhenTheTargetNodeIsDeleted() {
    Team t = team("status");
    HttpResponse<Buffer> made = createRoute(t, route(t, "status.example.com"));
    assertEquals(201, made.statusCode(), made.bodyAsString());
    String id = made.bodyAsJsonObject().getString("id");
    assertEquals("active", state(made.bodyAsJsonObject()), "the create answer carries it");
    assertEquals("active", stateRead(t, id));
    assertEquals(1, served(t).size());

    // the service unbound: the route is service_unbound, and its ingress nodes are sent it without an
    // address (the rule keeps its place; the edge answers its requests 502)
    bind(t.web());
    assertEquals("service_unbound", stateRead(t, id));
    assertEquals(new JsonObject().put("node", t.web().id()).put("service", "web").put("state", "service_unbound"),
        served(t).getJsonObject(0).getJsonObject("target"));
    // another service bound is not the route's
    bind(t.web(), "ssh:22");
    assertEquals("service_unbound", stateRead(t, id));
    // rebound: active again, and sent again
    bind(t.web(), "ssh:22", "web:8080");
    assertEquals("active", stateRead(t, id));
    JsonObject target = served(t).getJsonObject(0).getJsonObject("target");
    assertEquals(8080, target.getInteger("port"));
    assertFalse(target.containsKey("state"), target.encode());
    // a replace may echo what a GET gave, status included
    JsonObject echoed = http.get(port, "/v1/ingress/routes/" + id, t.op()).bodyAsJsonObject().put("exposure", "mesh");
    HttpResponse<Buffer> replaced = http.send(HttpMethod.PUT, port, "/v1/ingress/routes/" + id, t.op(), echoed);
    assertEquals(200, replaced.statusCode(), replaced.bodyAsString());
    assertEquals("active", state(replaced.bodyAsJsonObject()), "the replace answer carries it");

    // the target node deprovisioned: the deletion succeeds, the route stays, target_missing
    assertEquals(204, http.send(HttpMethod.DELETE, port, "/v1/nodes/" + t.web().id(), admin, null).statusCode());
    assertEquals("target_missing", stateRead(t, id));
    assertEquals(t.web().id(), http.get(port, "/v1/ingress/routes/" + id, t.op()).bodyAsJsonObject().getJsonObject("target").getString("node"));
    assertEquals("target_missing", served(t).getJsonObject(0).getJsonObject("target").getString("state"));
    // a replace must name a target that exists (400 naming it); a delete removes the route
    HttpResponse<Buffer> stale = http.send(HttpMethod.PUT, port, "/v1/ingress/routes/" + id, t.op(), route(t, "status.example.com"));
    assertEquals(400, stale.statusCode(), stale.bodyAsString());
    assertEquals("target.node", stale.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(204, http.send(HttpMethod.DELETE, port, "/v1/ingress/routes/" + id, t.op(), null).statusCode());
    assertEquals(404, http.get(port, "/v1/ingress/routes/" + id, t.op()).statusCode());
  }
}
