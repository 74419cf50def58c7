package io.meshplane.ingress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Ingress routes over real HTTP and PostgreSQL (API.md §18): ordered rules with If-Match, the policy's
 * refusal naming the missing grant, isolation between teams, hostile hostnames and paths named in
 * 400s, and delivery to ingress nodes in heartbeat answers with {@code ingress_sync}.
 */
@Timeout(180)
class IngressRoutesTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static int port;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("writebehind.flush_interval", "100ms"));
    app = cluster.replica(0);
    http = cluster.http();
    port = app.coordinatorPort();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  /** A team's edge (tag:edge) and web (tag:web, web:8080 bound) nodes, and a policy letting tag:edge reach tag:web on tcp/8080 when {@code allow}. */
  record Team(String team, Nodes.Enrolled edge, Nodes.Enrolled web) {}

  static Team team(String team, boolean allow) {
    Nodes.Enrolled edge = enroll(team + "-edge", team, "tag:edge");
    Nodes.Enrolled web = enroll(team + "-web", team, "tag:web");
    assertEquals(200, http.send(HttpMethod.PUT, port, "/v1/nodes/" + web.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray().add("web:8080"))).statusCode());
    JsonArray grants = new JsonArray();
    if (allow) grants.add(grant("tag:edge", "tag:web", "tcp/8080"));
    grants.add(grant("tag:web", "tag:web", "tcp/22"));
    HttpResponse<Buffer> p = http.send(HttpMethod.PUT, port, "/v1/acl?team=" + team + "&environment=prod", admin,
        new JsonObject().put("grants", grants));
    assertEquals(200, p.statusCode(), p.bodyAsString());
    return new Team(team, edge, web);
  }

  static JsonObject grant(String src, String dst, String ports) {
    return new JsonObject().put("src", new JsonArray().add(src)).put("dst", new JsonArray().add(dst)).put("ports", new JsonArray().add(ports));
  }

  static Nodes.Enrolled enroll(String name, String team, String tag) {
    return enrollVia(http, port, admin, name, team, tag);
  }

  static Nodes.Enrolled enrollVia(Http http, int port, String admin, String name, String team, String tag) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", Nodes.key()).put("team", team).put("environment", "prod")
        .put("tags", new JsonArray().add(tag));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes", admin, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Nodes.Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  static JsonObject route(Team t, String hostname, String path) {
    return new JsonObject().put("team", t.team()).put("environment", "prod").put("hostname", hostname).put("path_prefix", path)
        .put("target", new JsonObject().put("node", t.web().id()).put("service", "web")).put("exposure", "public").put("tls", "acme")
        .put("ingress_tag", "tag:edge");
  }

  static HttpResponse<Buffer> send(HttpMethod m, String path, String token, JsonObject body, String ifMatch) {
    var req = http.request(m, port, path).bearerTokenAuthentication(token);
    if (ifMatch != null) req.putHeader("If-Match", ifMatch);
    if (body == null) return http.send(req);
    req.putHeader("Content-Type", "application/json");
    return http.send(req, body.encode().getBytes());
  }

  static JsonObject created(String token, JsonObject body) {
    HttpResponse<Buffer> r = send(HttpMethod.POST, "/v1/ingress/routes", token, body, null);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().put("etag", r.getHeader("ETag"));
  }

  static List<String> order(String team) {
    JsonArray items = http.get(port, "/v1/ingress/routes?team=" + team + "&environment=prod", admin).bodyAsJsonObject().getJsonArray("items");
    return items.stream().map(o -> ((JsonObject) o).getInteger("position") + " " + ((JsonObject) o).getString("path_prefix")).toList();
  }

  @Test
  void routesAreOrderedRulesChangedUnderIfMatchAndAudited() {
    Team t = team("crud", true);
    JsonObject root = created(admin, route(t, "app.example.com", "/"));
    assertTrue(root.getString("id").startsWith("ir_"));
    assertEquals(1, root.getInteger("position"));
    assertEquals("\"1\"", root.getString("etag"));
    assertEquals(new JsonObject().put("node", t.web().id()).put("service", "web"), root.getJsonObject("target"));
    // a rule placed first moves the others down
    JsonObject api = created(admin, route(t, "app.example.com", "/api").put("position", 1));
    assertEquals("\"2\"", api.getString("etag"));
    assertEquals(List.of("1 /api", "2 /"), order("crud"));
    // the default path prefix is "/"; the same hostname, prefix and tag twice is a 409 naming the first
    HttpResponse<Buffer> twice = send(HttpMethod.POST, "/v1/ingress/routes", admin, route(t, "app.example.com", "/").copy(), null);
    assertEquals(409, twice.statusCode(), twice.bodyAsString());
    assertEquals("duplicate_route", twice.bodyAsJsonObject().getString("code"));

    // replace under If-Match: a stale version is a 409, the current one moves the rule
    String path = "/v1/ingress/routes/" + root.getString("id");
    JsonObject moved = route(t, "app.example.com", "/").put("position", 1);
    HttpResponse<Buffer> stale = send(HttpMethod.PUT, path, admin, moved, "\"1\"");
    assertEquals(409, stale.statusCode(), stale.bodyAsString());
    HttpResponse<Buffer> ok = send(HttpMethod.PUT, path, admin, moved, "\"2\"");
    assertEquals(200, ok.statusCode(), ok.bodyAsString());
    assertEquals("\"3\"", ok.getHeader("ETag"));
    assertEquals(List.of("1 /", "2 /api"), order("crud"));
    // a position past the end is a 400 naming it
    HttpResponse<Buffer> far = send(HttpMethod.PUT, path, admin, moved.copy().put("position", 3), null);
    assertEquals(400, far.statusCode());
    assertEquals("position", far.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));

    // GET one and the list carry the version as ETag
    HttpResponse<Buffer> one = http.get(port, path, admin);
    assertEquals(200, one.statusCode());
    assertEquals("\"3\"", one.getHeader("ETag"));
    assertEquals("\"3\"", http.get(port, "/v1/ingress/routes?team=crud&environment=prod", admin).getHeader("ETag"));
    // cursor paging
    JsonObject page = http.get(port, "/v1/ingress/routes?team=crud&environment=prod&limit=1", admin).bodyAsJsonObject();
    assertEquals(1, page.getJsonArray("items").size());
    JsonObject next = http.get(port, "/v1/ingress/routes?team=crud&environment=prod&limit=1&cursor=" + page.getString("next_cursor"), admin)
        .bodyAsJsonObject();
    assertEquals("/api", next.getJsonArray("items").getJsonObject(0).getString("path_prefix"));
    assertNull(next.getString("next_cursor"));

    // delete: the others close up
    assertEquals(409, send(HttpMethod.DELETE, path, admin, null, "\"2\"").statusCode());
    assertEquals(204, send(HttpMethod.DELETE, path, admin, null, "\"3\"").statusCode());
    assertEquals(List.of("1 /api"), order("crud"));
    assertEquals(404, http.get(port, path, admin).statusCode());

    // audited: each change once, in the team's scope
    for (String action : List.of("ingress.route.create", "ingress.route.update", "ingress.route.delete")) {
      JsonArray items = http.get(port, "/v1/audit?action=" + action + "&limit=100", admin).bodyAsJsonObject().getJsonArray("items");
      long mine = items.stream().map(o -> (JsonObject) o).filter(e -> "crud".equals(e.getString("team")) && "success".equals(e.getString("outcome")))
          .count();
      assertEquals(action.endsWith("create") ? 2 : 1, mine, action + ": " + items.encode());
    }
  }

  @Test
  void aRouteThePolicyBlocksIsRefusedNamingTheMissingGrant() {
    Team t = team("blocked", false);
    HttpResponse<Buffer> r = send(HttpMethod.POST, "/v1/ingress/routes", admin, route(t, "blocked.example.com", "/"), null);
    assertEquals(409, r.statusCode(), r.bodyAsString());
    JsonObject problem = r.bodyAsJsonObject();
    assertEquals("policy_blocks", problem.getString("code"));
    assertEquals("ingress_tag", problem.getJsonArray("errors").getJsonObject(0).getString("field"));
    assertTrue(problem.getString("detail").startsWith("no grant lets tag:edge reach blocked-web (tag:web) tcp/8080"), problem.getString("detail"));
    assertEquals(0, order("blocked").size(), "nothing stored");

    // a target without the service, or in another team, is a 400 naming the field
    JsonObject noService = route(t, "blocked.example.com", "/");
    noService.getJsonObject("target").put("service", "db");
    HttpResponse<Buffer> svc = send(HttpMethod.POST, "/v1/ingress/routes", admin, noService, null);
    assertEquals(400, svc.statusCode(), svc.bodyAsString());
    assertEquals("target.service", svc.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    Team other = team("elsewhere", true);
    JsonObject foreign = route(t, "blocked.example.com", "/");
    foreign.getJsonObject("target").put("node", other.web().id());
    HttpResponse<Buffer> node = send(HttpMethod.POST, "/v1/ingress/routes", admin, foreign, null);
    assertEquals(400, node.statusCode(), node.bodyAsString());
    assertEquals("target.node", node.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));

    // once the policy has the grant, the same route is stored
    HttpResponse<Buffer> p = http.send(HttpMethod.PUT, port, "/v1/acl?team=blocked&environment=prod", admin,
        new JsonObject().put("grants", new JsonArray().add(grant("tag:edge", "tag:web", "tcp/8080"))));
    assertEquals(200, p.statusCode(), p.bodyAsString());
    created(admin, route(t, "blocked.example.com", "/"));
  }

  @Test
  void aTeamNeitherSeesNorChangesAnotherTeamsRoutesNorTakesItsHostname() {
    Team alpha = team("alpha", true);
    Team beta = team("beta", true);
    String alphaOp = Tokens.issue(app, "alpha", "prod", Surface.OPERATOR).jwt();
    String betaOp = Tokens.issue(app, "beta", "prod", Surface.OPERATOR).jwt();
    JsonObject mine = created(alphaOp, route(alpha, "shared.example.com", "/").copy());
    String path = "/v1/ingress/routes/" + mine.getString("id");
    assertEquals(404, http.get(port, path, betaOp).statusCode());
    assertEquals(404, send(HttpMethod.PUT, path, betaOp, route(alpha, "shared.example.com", "/"), null).statusCode());
    assertEquals(404, send(HttpMethod.DELETE, path, betaOp, null, null).statusCode());
    JsonArray seen = http.get(port, "/v1/ingress/routes", betaOp).bodyAsJsonObject().getJsonArray("items");
    assertTrue(seen.stream().noneMatch(o -> ((JsonObject) o).getString("team").equals("alpha")), seen.encode());
    assertEquals(0, http.get(port, "/v1/ingress/routes?team=alpha", betaOp).bodyAsJsonObject().getJsonArray("items").size());
    // creating in another team is a 403 (audited as a denial)
    HttpResponse<Buffer> into = send(HttpMethod.POST, "/v1/ingress/routes", betaOp, route(alpha, "x.example.com", "/"), null);
    assertEquals(403, into.statusCode(), into.bodyAsString());
    // a hostname alpha holds cannot be taken by beta, even for its own nodes: 409 naming hostname, not alpha
    HttpResponse<Buffer> taken = send(HttpMethod.POST, "/v1/ingress/routes", betaOp, route(beta, "shared.example.com", "/other"), null);
    assertEquals(409, taken.statusCode(), taken.bodyAsString());
    assertEquals("hostname_taken", taken.bodyAsJsonObject().getString("code"));
    assertEquals("hostname", taken.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertFalse(taken.bodyAsString().contains("alpha"), taken.bodyAsString());
    // the route is untouched
    assertEquals(200, http.get(port, path, alphaOp).statusCode());
    // a hostname another team's node holds as its ingress (API.md §9) is taken too
    assertEquals(201, http.send(HttpMethod.POST, port, "/v1/nodes/" + alpha.edge().id() + "/ingress", admin,
        new JsonObject().put("name", "web").put("hostname", "node-held.example.com").put("port", 443)).statusCode());
    HttpResponse<Buffer> held = send(HttpMethod.POST, "/v1/ingress/routes", betaOp, route(beta, "node-held.example.com", "/"), null);
    assertEquals(409, held.statusCode(), held.bodyAsString());
    assertEquals("hostname_taken", held.bodyAsJsonObject().getString("code"));
    // while alpha itself may route it
    created(alphaOp, route(alpha, "node-held.example.com", "/"));
  }

  @Test
  void hostileHostnamesAndPathsAreA400NamingTheField() {
    Team t = team("hostile", true);
    for (String h : IngressNamesTest.BAD_HOSTS) {
      HttpResponse<Buffer> r = send(HttpMethod.POST, "/v1/ingress/routes", admin, route(t, h, "/"), null);
      assertEquals(400, r.statusCode(), h + ": " + r.bodyAsString());
      assertEquals("hostname", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), h);
    }
    for (String p : IngressNamesTest.BAD_PATHS) {
      HttpResponse<Buffer> r = send(HttpMethod.POST, "/v1/ingress/routes", admin, route(t, "ok.example.com", p), null);
      assertEquals(400, r.statusCode(), p + ": " + r.bodyAsString());
      assertEquals("path_prefix", r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), p);
    }
    for (String[] bad : new String[][] {{"exposure", "internet"}, {"tls", "self"}, {"ingress_tag", "edge"}, {"nonsense", "1"}}) {
      HttpResponse<Buffer> r = send(HttpMethod.POST, "/v1/ingress/routes", admin, route(t, "ok.example.com", "/").put(bad[0], bad[1]), null);
      assertEquals(400, r.statusCode(), bad[0] + ": " + r.bodyAsString());
      assertEquals(bad[0], r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    }
    assertEquals(0, order("hostile").size(), "nothing stored");
  }

  static JsonObject beat(Nodes.Enrolled n, JsonObject body) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), body);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  @Test
  void ingressNodesGetTheirRoutesInHeartbeatsAndAcknowledgeThem() {
    Team t = team("deliver", true);
    JsonObject first = created(admin, route(t, "shop.example.com", "/"));
    JsonObject second = created(admin, route(t, "shop.example.com", "/api").put("position", 1));
    // the web node serves no route and reports none: no block at all
    assertFalse(beat(t.web(), new JsonObject()).containsKey("ingress_routes"));
    // the edge node gets its routes in order, targets resolved
    JsonObject block = beat(t.edge(), new JsonObject()).getJsonObject("ingress_routes");
    assertEquals("2", block.getString("version"));
    JsonArray routes = block.getJsonArray("routes");
    assertEquals(List.of(second.getString("id"), first.getString("id")), routes.stream().map(o -> ((JsonObject) o).getString("id")).toList());
    JsonObject target = routes.getJsonObject(0).getJsonObject("target");
    assertEquals(t.web().id(), target.getString("node"));
    assertEquals(8080, target.getInteger("port"));
    assertEquals("tcp", target.getString("proto"));
    assertEquals(t.web().node().getString("address").replace("/32", ""), target.getString("address"));
    assertEquals(Map.of("id", second.getString("id"), "hostname", "shop.example.com", "path_prefix", "/api", "exposure", "public", "tls", "acme"),
        Map.of("id", routes.getJsonObject(0).getString("id"), "hostname", routes.getJsonObject(0).getString("hostname"), "path_prefix",
            routes.getJsonObject(0).getString("path_prefix"), "exposure", routes.getJsonObject(0).getString("exposure"), "tls",
            routes.getJsonObject(0).getString("tls")));
    JsonObject sync = http.get(port, "/v1/nodes/" + t.edge().id(), admin).bodyAsJsonObject().getJsonObject("ingress_sync");
    assertEquals("behind", sync.getString("state"), sync.encode());

    // the agent reports what it applied, with its counters: unchanged, and the node record says current
    JsonObject stats = new JsonObject().put("requests", 5).put("errors", 1).put("active", 0).put("bytes_in", 100).put("bytes_out", 2000)
        .putNull("serial").put("status_classes", new JsonObject().put("2xx", 4).put("3xx", 0).put("4xx", 0).put("5xx", 1));
    JsonObject report = new JsonObject().put("version", "2").put("routes", new JsonObject().put(second.getString("id"), stats));
    JsonObject again = beat(t.edge(), new JsonObject().put("ingress_routes", report)).getJsonObject("ingress_routes");
    assertEquals(new JsonObject().put("version", "2").put("unchanged", true), again);
    JsonObject record = http.get(port, "/v1/nodes/" + t.edge().id(), admin).bodyAsJsonObject();
    assertEquals(new JsonObject().put("state", "current").put("acknowledged", "2").put("current", "2"), record.getJsonObject("ingress_sync"));
    assertEquals(5L, record.getJsonObject("ingress_stats").getJsonObject(second.getString("id")).getLong("requests"));
    JsonObject unserved = http.get(port, "/v1/nodes/" + t.web().id(), admin).bodyAsJsonObject().getJsonObject("ingress_sync");
    assertEquals("none", unserved.getString("state"));
    assertTrue(unserved.containsKey("current") && unserved.getValue("current") == null, "no version to be current with: " + unserved);

    // a bad report is a 400 naming the field, and nothing of the heartbeat is stored
    JsonObject bad = report.copy();
    bad.getJsonObject("routes").getJsonObject(second.getString("id")).put("requests", -1);
    HttpResponse<Buffer> refused = http.send(HttpMethod.POST, port, "/v1/nodes/" + t.edge().id() + "/heartbeat", t.edge().token(),
        new JsonObject().put("ingress_routes", bad));
    assertEquals(400, refused.statusCode(), refused.bodyAsString());
    assertEquals("ingress_routes.routes." + second.getString("id") + ".requests",
        refused.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));

    // a change of the routes: a full answer under the next version
    assertEquals(204, send(HttpMethod.DELETE, "/v1/ingress/routes/" + second.getString("id"), admin, null, null).statusCode());
    JsonObject after = beat(t.edge(), new JsonObject().put("ingress_routes", report)).getJsonObject("ingress_routes");
    assertEquals("3", after.getString("version"));
    assertEquals(1, after.getJsonArray("routes").size());
    assertEquals("behind", http.get(port, "/v1/nodes/" + t.edge().id(), admin).bodyAsJsonObject().getJsonObject("ingress_sync")
        .getString("state"));

    // re-tagged away from tag:edge: the node serves nothing any more and is told so (an empty list under a new version)
    assertEquals(200, http.send(HttpMethod.PUT, port, "/v1/nodes/" + t.edge().id() + "/tags", admin,
        new JsonObject().put("tags", new JsonArray().add("tag:other"))).statusCode());
    JsonObject none = beat(t.edge(), new JsonObject().put("ingress_routes", new JsonObject().put("version", "3")))
        .getJsonObject("ingress_routes");
    assertTrue(none.getString("version").startsWith("3."), none.encode());
    assertEquals(new JsonArray(), none.getJsonArray("routes"));
    JsonObject done = beat(t.edge(), new JsonObject().put("ingress_routes", new JsonObject().put("version", none.getString("version"))))
        .getJsonObject("ingress_routes");
    assertEquals(true, done.getBoolean("unchanged"));
    assertEquals("current", http.get(port, "/v1/nodes/" + t.edge().id(), admin).bodyAsJsonObject().getJsonObject("ingress_sync")
        .getString("state"));
  }
}
