package io.meshplane.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.auth.Scope;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The logs as people read them, against real replicas and PostgreSQL: node events in either order with
 * keyset pages both ways and a whole node name; the audit trail's target names, its whole actor name,
 * and client addresses in their usual form, for new rows (recorded so) and old ones (shown so).
 */
@Timeout(120)
class LogsApiTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;
  /** The five events written by {@link #events()}, oldest first. */
  static final List<String> EVENTS = List.of("ev_01m8000000000000000000ev01", "ev_01m8000000000000000000ev02",
      "ev_01m8000000000000000000ev03", "ev_01m8000000000000000000ev04", "ev_01m8000000000000000000ev05");
  static final List<String> NEWEST = List.of(EVENTS.get(4), EVENTS.get(3), EVENTS.get(2), EVENTS.get(1), EVENTS.get(0));

  @BeforeAll
  static void start() throws Exception {
    // the tests run on the IPv4 stack: clients at IPv6 addresses come through a trusted proxy (the test itself)
    cluster = TestCluster.started(1, Map.of("http.trusted_proxies", "127.0.0.1/32"));
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
    String[] names = {"alpha-1", "beta-1", "alpha-2", "alpha-20", "gamma-1"};
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
      for (int i = 0; i < EVENTS.size(); i++) {
        st.execute("INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat) VALUES ('"
            + EVENTS.get(i) + "', now() - interval '" + (10 - i) + " minutes', 'node.stale', 'nd_01m80000000000000000000n0" + i + "', '"
            + names[i] + "', 'web', 'prod', now() - interval '20 minutes')");
      }
      // rows recorded before addresses were written in their usual form
      st.execute("INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id, outcome, "
          + "source_ip, team, environment) VALUES ('ev_01m8000000000000000000old6', now() - interval '1 day', 'user', "
          + "'usr_01m800000000000000000old6', 'old-six', 'token.revoke', 'token', 'tok_01m800000000000000000old6', 'success', "
          + "'0:0:0:0:0:0:0:1', 'web', 'prod'), ('ev_01m8000000000000000000old4', now() - interval '1 day', 'user', "
          + "'usr_01m800000000000000000old4', 'old-four', 'token.revoke', 'token', 'tok_01m800000000000000000old4', 'success', "
          + "'::ffff:192.0.2.7', 'web', 'prod')");
    }
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void eventsAreListedOldestFirstByDefaultAndNewestFirstOnRequestWithPagesBothWays() {
    assertEquals(EVENTS, ids(events("")), "oldest first, as before, without order");
    assertEquals(EVENTS, ids(events("order=oldest")));
    assertEquals(NEWEST, ids(events("order=newest")));

    // keyset pages newest first: 2, 2, 1, each continuing where the last stopped
    List<String> walked = new ArrayList<>();
    String cursor = null;
    int pages = 0;
    do {
      JsonObject page = events("order=newest&limit=2" + (cursor == null ? "" : "&cursor=" + cursor));
      walked.addAll(ids(page));
      cursor = page.getString("next_cursor");
      pages++;
    } while (cursor != null);
    assertEquals(NEWEST, walked);
    assertEquals(3, pages);
    // and oldest first, the same way
    JsonObject first = events("order=oldest&limit=3");
    assertEquals(EVENTS.subList(0, 3), ids(first));
    assertEquals(EVENTS.subList(3, 5), ids(events("order=oldest&limit=3&cursor=" + first.getString("next_cursor"))));

    // a cursor belongs to its order: the other order refuses it rather than give a shifted page
    String newestCursor = events("order=newest&limit=2").getString("next_cursor");
    assertProblem(get("/v1/events?order=oldest&cursor=" + newestCursor), "cursor");
    assertProblem(get("/v1/events?cursor=" + newestCursor), "cursor");
    assertProblem(get("/v1/events?order=sideways"), "order");
    assertProblem(get("/v1/events?order="), "order");
  }

  @Test
  void eventsAreFilteredByAWholeNodeName() {
    assertEquals(List.of(EVENTS.get(2)), ids(events("node_name=alpha-2")), "alpha-2, not alpha-20: a whole name, not a prefix");
    assertEquals(List.of(EVENTS.get(3)), ids(events("order=newest&node_name=alpha-20")));
    assertEquals(List.of(EVENTS.get(1)), ids(events("node_name=beta-1")));
    assertEquals(List.of(), ids(events("node_name=alpha")), "a prefix matches nothing");
    assertEquals(List.of(), ids(events("node_name=delta")));
    assertEquals(List.of(), ids(events("node_name=Alpha-1")), "case-sensitive");
    assertProblem(get("/v1/events?node_name="), "node_name");
    assertProblem(get("/v1/events?node_name=" + enc("a\u0001")), "node_name");
    assertProblem(get("/v1/events?node_name=" + "a".repeat(65)), "node_name");
    // outside the caller's scope nothing is listed, whatever the name
    String db = Tokens.issue(app, "db", "prod", Surface.MONITORING).jwt();
    assertEquals(0, http.get(app.coordinatorPort(), "/v1/events?node_name=alpha-1", db).bodyAsJsonObject().getJsonArray("items").size());
  }

  @Test
  void theTrailNamesTargetsAndIsFilteredByAWholeActorName() {
    String robot = Tokens.issue(app, "ops-robot", new Scope("*", "*", Surface.ADMIN), null, Instant.now().plus(Duration.ofDays(1))).jwt();
    HttpResponse<Buffer> created = http.send(HttpMethod.POST, app.coordinatorPort(), "/v1/auth/tokens", robot, new JsonObject()
        .put("name", "nightly-backup").put("scope", new JsonObject().put("team", "web").put("environment", "prod").put("surface", "pipeline"))
        .put("expires", Instant.now().plus(Duration.ofDays(2)).toString()));
    assertEquals(201, created.statusCode(), created.bodyAsString());
    String tokenId = created.bodyAsJsonObject().getString("id");
    Nodes.Enrolled node = Nodes.enroll(http, app.coordinatorPort(), robot, "named-1", "web", "prod");
    PanelSession.user(app, "ops-person", "admin", "*", "*");
    PanelSession.signIn(http, app.panelPort(), "ops-person");

    JsonObject create = only(audit("action=token.create&actor_name=ops-robot"));
    assertEquals(new JsonObject().put("type", "token").put("id", tokenId).put("name", "nightly-backup"), create.getJsonObject("target"));
    assertEquals("ops-robot", create.getJsonObject("actor").getString("name"));
    JsonObject enroll = only(audit("action=node.enroll&actor_name=ops-robot"));
    assertEquals(new JsonObject().put("type", "node").put("id", node.id()).put("name", "named-1"), enroll.getJsonObject("target"));
    JsonObject login = only(audit("action=session.login&actor_name=ops-person"));
    assertEquals("ops-person", login.getJsonObject("target").getString("name"));

    // the whole name: each actor's rows and only theirs; a prefix or another case matches nothing
    JsonArray robots = audit("actor_name=ops-robot").getJsonArray("items");
    assertTrue(robots.size() >= 2, robots.encodePrettily());
    for (Object o : robots) assertEquals("ops-robot", ((JsonObject) o).getJsonObject("actor").getString("name"), o.toString());
    JsonArray people = audit("actor_name=ops-person").getJsonArray("items");
    assertTrue(people.size() >= 1, people.encodePrettily());
    for (Object o : people) assertEquals("ops-person", ((JsonObject) o).getJsonObject("actor").getString("name"), o.toString());
    assertEquals(0, audit("actor_name=ops-").getJsonArray("items").size(), "not a prefix");
    assertEquals(0, audit("actor_name=ops-r").getJsonArray("items").size(), "not a prefix");
    assertEquals(0, audit("actor_name=OPS-ROBOT").getJsonArray("items").size(), "case-sensitive");
    assertEquals(0, audit("actor_name=" + enc("ops-robot\uffff")).getJsonArray("items").size());
    assertProblem(get("/v1/audit?actor_name="), "actor_name");
    assertProblem(get("/v1/audit?actor_name=" + enc("ops\n")), "actor_name");
    // a row recorded before names were has a target without one: its id is what there is
    JsonObject old = only(audit("actor_name=old-six"));
    assertNull(old.getJsonObject("target").getString("name"));
    assertTrue(old.getJsonObject("target").containsKey("name"), "the field is always there");
  }

  @Test
  void clientAddressesAreInTheirUsualFormForNewRowsAndOldOnes() throws Exception {
    // changes made from ::1 and from an IPv4-mapped address: recorded as ::1 and as IPv4
    String v6 = createToken("from-ipv6", "0:0:0:0:0:0:0:1");
    String mapped = createToken("from-mapped", "::ffff:198.51.100.9");
    String direct = createToken("from-ipv4", null);
    assertEquals("::1", tokenCreated(v6).getString("source_ip"));
    assertEquals("198.51.100.9", tokenCreated(mapped).getString("source_ip"));
    assertEquals("127.0.0.1", tokenCreated(direct).getString("source_ip"));
    try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
         var rs = st.executeQuery("SELECT source_ip FROM audit_events WHERE id = '" + tokenCreated(v6).getString("id") + "'")) {
      rs.next();
      assertEquals("::1", rs.getString(1), "recorded in its usual form, not only shown so");
    }

    // rows recorded before: shown in the usual form
    assertEquals("::1", only(audit("actor_name=old-six")).getString("source_ip"));
    assertEquals("192.0.2.7", only(audit("actor_name=old-four")).getString("source_ip"), "IPv4-mapped shown as IPv4");
  }

  /** Creates a token as a client at {@code client} behind the trusted proxy (none: the test's own 127.0.0.1); returns its id. */
  private static String createToken(String name, String client) {
    var request = http.request(HttpMethod.POST, app.coordinatorPort(), "/v1/auth/tokens").bearerTokenAuthentication(admin);
    if (client != null) request.putHeader("X-Forwarded-For", client);
    HttpResponse<Buffer> r = Http.await(request.sendJsonObject(new JsonObject().put("name", name)
        .put("scope", new JsonObject().put("team", "web").put("environment", "prod").put("surface", "pipeline"))
        .put("expires", Instant.now().plus(Duration.ofDays(2)).toString())), 20);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getString("id");
  }

  private static JsonObject tokenCreated(String tokenId) {
    return audit("action=token.create").getJsonArray("items").stream().map(o -> (JsonObject) o)
        .filter(e -> tokenId.equals(e.getJsonObject("target").getString("id"))).findFirst().orElseThrow();
  }

  private static JsonObject events(String query) {
    HttpResponse<Buffer> r = get("/v1/events?" + query);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static JsonObject audit(String query) {
    HttpResponse<Buffer> r = get("/v1/audit?" + query);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static HttpResponse<Buffer> get(String path) {
    return http.get(app.coordinatorPort(), path, admin);
  }

  private static List<String> ids(JsonObject page) {
    return page.getJsonArray("items").stream().map(o -> ((JsonObject) o).getString("id")).toList();
  }

  private static JsonObject only(JsonObject page) {
    JsonArray items = page.getJsonArray("items");
    assertEquals(1, items.size(), items.encodePrettily());
    return items.getJsonObject(0);
  }

  private static void assertProblem(HttpResponse<Buffer> r, String field) {
    assertEquals(400, r.statusCode(), r.bodyAsString());
    JsonArray errors = r.bodyAsJsonObject().getJsonArray("errors");
    assertNotNull(errors, r.bodyAsString());
    assertEquals(field, errors.getJsonObject(0).getString("field"), r.bodyAsString());
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
