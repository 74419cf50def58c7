package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.RawHttp;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.yaml.snakeyaml.Yaml;

/**
 * Hostile input against every route that takes input, generated: each case is a valid request broken
 * in one way (the body's syntax, encoding, types, nesting, size or media type; the path or query's
 * escapes, separators, repeated or forged parameters; the HTTP framing itself). For every case: a 4xx
 * problem+json, naming the field where there is one; no 5xx; nothing at ERROR and no stack trace in
 * the log; no record changed (tokens, nodes, the audit trail's non-denial events, the ACL policies,
 * the operations, the panel's users, the node's live entry); and the replica still serving.
 *
 * <p>Three tests share the cases: the property draws them at random (the statistics at the end show
 * that every kind of breakage was tried); the sweep sends every kind of breakage to every route of the
 * lists at least once per run, a 10,000-level nesting among them; and the lists themselves are checked
 * against openapi.yaml, so that a route added there without being added here fails, named.
 */
class HostileInputTest {
  enum Breakage {
    TRUNCATED, WRONG_TYPE, NULL_REQUIRED, NUL_CHARACTER, CONTROL_CHARACTER, LONE_SURROGATE, BAD_UTF8, DEEP_NESTING, HUGE_ARRAY,
    LONG_ARRAY, INFINITE_NUMBER, COMMENT, DUPLICATE_KEY, TRAILING_GARBAGE, UTF16_BOM, WRONG_MEDIA_TYPE, BAD_PATH_ESCAPE,
    BAD_QUERY_VALUE, QUERY_SEMICOLON, QUERY_REPEATED, FORGED_CURSOR, HOSTILE_ID, OVERSIZE_HEADERS, OVERSIZE_URI, BAD_CHUNKING
  }

  /** The breakages of a query string; of an id in the path; of the HTTP framing alone; the rest break a body. */
  static final Set<Breakage> QUERY = Set.of(Breakage.BAD_QUERY_VALUE, Breakage.QUERY_SEMICOLON, Breakage.QUERY_REPEATED,
      Breakage.FORGED_CURSOR);
  static final Set<Breakage> FRAMING = Set.of(Breakage.OVERSIZE_HEADERS, Breakage.OVERSIZE_URI);
  /** The breakages of a body that the route's own checks refuse (the parser refuses the others). */
  static final Set<Breakage> FIELD_CHECKS = Set.of(Breakage.WRONG_TYPE, Breakage.NULL_REQUIRED, Breakage.CONTROL_CHARACTER,
      Breakage.LONG_ARRAY);

  /** Deepest nesting a body may have (the server's StrictJsonReader.MAX_DEPTH; docs/API.md §1). */
  static final int MAX_DEPTH = 32;

  enum Kind { STRING, NUMBER, BOOLEAN, OBJECT, ARRAY }

  /**
   * A field of a body: its place as the JSON parser names it ({@code scope.team}, {@code ingress[0].name}),
   * the name the route's own validation gives it (the same, or a JSON pointer such as
   * {@code /grants/0/src} for a policy), its JSON type, and what it refuses. A field the route does not
   * read ({@code checked} false: unknown fields are ignored, API.md §1) only carries breakages of the syntax.
   */
  record Field(String path, String name, Kind kind, boolean refusesNull, boolean refusesControl, boolean checked) {
    Field(String path, Kind kind, boolean refusesNull, boolean refusesControl) {
      this(path, path, kind, refusesNull, refusesControl, true);
    }

    /** A field of a policy document, named by JSON pointer in refusals ({@code grants[0].src} is {@code /grants/0/src}). */
    static Field pointer(String path, Kind kind, boolean refusesNull, boolean refusesControl) {
      return new Field(path, "/" + path.replace("]", "").replace('[', '/').replace('.', '/'), kind, refusesNull, refusesControl, true);
    }

    static Field ignored(String path) {
      return new Field(path, path, Kind.STRING, false, false, false);
    }
  }

  /** Where a request goes and with what credential: a port, and the headers that authenticate it (bearer, or cookie + CSRF). */
  record Door(int port, Map<String, String> headers) {}

  /**
   * A route that takes a body: the operation as openapi.yaml names it ({@code template}), the concrete
   * path and query it is sent to, and a valid body to break with its fields.
   */
  record BodyRoute(HttpMethod method, String template, String path, String query, Door door, JsonObject body, List<Field> fields) {
    String target() {
      return query.isEmpty() ? path : path + "?" + query;
    }
  }

  /**
   * A route that takes query parameters: each with a value that is valid for it; the list its cursors
   * belong to (null when it is not paged); a valid body when the method takes one.
   */
  record QueryRoute(HttpMethod method, String template, String path, Door door, Map<String, String> params, String list, JsonObject body) {}

  /** A route with a path parameter: {@code target} has {@code {hostile}} where {@code param} goes, every other parameter valid. */
  record IdRoute(HttpMethod method, String template, String param, String target, Door door, Set<Integer> statuses) {}

  /**
   * One hostile request and what the answer must be: one of {@code statuses}; a problem naming
   * {@code field} when not null (exactly, or for the route's own validation, as the start of a name:
   * {@code scope} is named by {@code scope.team} as well).
   */
  record Case(Breakage breakage, String what, HttpMethod method, int port, String target, String contentType, byte[] body,
      Map<String, String> headers, Set<Integer> statuses, String field, boolean exact, byte[] raw) {
    @Override
    public String toString() {
      return breakage + " " + what + " -> " + statuses + (field == null ? "" : " naming " + field);
    }
  }

  static LogCapture logs;
  static TestCluster cluster;
  static TestDatabase db;
  static Connection sql;
  static Meshplane app;
  static Http http;
  static int port;
  static int panelPort;
  static String admin;
  static Nodes.Enrolled node;
  static String tokenId;
  static String tokensCursor;
  static String userId;
  static int checked;
  static final List<BodyRoute> BODY_ROUTES = new ArrayList<>();
  static final List<QueryRoute> QUERY_ROUTES = new ArrayList<>();
  static final List<IdRoute> ID_ROUTES = new ArrayList<>();
  static final String RELAYS = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example.net\"},"
      + "{\"name\":\"ams1\",\"region\":\"eu\",\"url\":\"https://ams1.example.net\"}]";

  @BeforeContainer
  static void start() throws Exception {
    logs = LogCapture.attach();
    // the panel's per-session API rate would answer 429 to a suite that sends hundreds of requests in a session
    cluster = TestCluster.started(1, Map.of("relays", RELAYS, "panel.api_rate", "100000", "panel.api_burst", "100000"));
    db = cluster.db();
    sql = db.connect();
    app = cluster.replica(0);
    port = app.coordinatorPort();
    panelPort = app.panelPort();
    http = cluster.http();
    admin = cluster.admin();
    node = Nodes.enroll(http, port, admin, "hostile-target", "web", "prod");
    assertEquals(200, http.send(HttpMethod.POST, port, "/v1/nodes/" + node.id() + "/heartbeat", node.token(), Nodes.beat(1)).statusCode());
    tokenId = Tokens.issue(app, "web", "prod", Surface.MONITORING).record().id();
    Tokens.issue(app, "web", "prod", Surface.PIPELINE);
    tokensCursor = http.get(port, "/v1/auth/tokens?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(tokensCursor);
    String expires = Instant.now().plus(Duration.ofDays(1)).toString();
    Door bearer = new Door(port, Map.of("Authorization", "Bearer " + admin));
    Door agent = new Door(port, Map.of("Authorization", "Bearer " + node.token()));
    String nodePath = "/v1/nodes/" + node.id();

    // what the routes below act on, made through the API: two policy versions, two operations, an ingress
    String scope = "team=web&environment=prod";
    JsonObject policy = new JsonObject()
        .put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:test"))
            .put("dst", new JsonArray().add("tag:test")).put("ports", new JsonArray().add("tcp/22"))))
        .put("tests", new JsonArray().add(new JsonObject().put("src", "tag:test").put("deny", new JsonArray().add("tag:test:udp/53"))));
    expect(200, http.send(HttpMethod.PUT, port, "/v1/acl?" + scope, admin, policy));
    expect(200, http.send(HttpMethod.PUT, port, "/v1/acl?" + scope, admin, policy.copy().put("tests", new JsonArray())));
    String aclCursor = http.get(port, "/v1/acl/versions?limit=1&" + scope, admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(aclCursor);
    expect(201, http.send(HttpMethod.POST, port, nodePath + "/ingress", admin,
        new JsonObject().put("name", "web").put("hostname", "web.example.net").put("port", 443)));
    expect(202, http.send(HttpMethod.POST, port, nodePath + "/rekey", admin, new JsonObject().put("note", "setup")));
    expect(202, http.send(HttpMethod.POST, port, nodePath + "/ingress/web/drain", admin, new JsonObject()));
    String opsCursor = http.get(port, nodePath + "/operations?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(opsCursor);
    String relay = http.get(port, nodePath, admin).bodyAsJsonObject().getString("relay");
    String otherRelay = "fra1".equals(relay) ? "ams1" : "fra1";
    expect(200, http.send(HttpMethod.POST, port, "/v1/acl/preview?" + scope, admin, preview(policy)));

    // the panel: an admin signed in (cookie + CSRF token) and a second user to change
    PanelSession.user(app, "root", "admin", "*", "*");
    userId = PanelSession.user(app, "target", "viewer", "web", "prod").getString("id");
    PanelSession root = PanelSession.signIn(http, panelPort, "root");
    Door panel = new Door(panelPort, Map.of("Cookie", root.cookie(), "X-CSRF-Token", root.csrf()));
    Door nobody = new Door(panelPort, Map.of());
    String usersCursor = root.get(panelPort, "/api/v1/users?limit=1").bodyAsJsonObject().getString("next_cursor");
    assertNotNull(usersCursor);

    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/auth/tokens", "/v1/auth/tokens", "", bearer,
        new JsonObject().put("name", "hostile").put("scope", new JsonObject().put("team", "web").put("surface", "monitoring")
            .put("environment", "prod")).put("expires", expires),
        List.of(new Field("name", Kind.STRING, true, true), new Field("scope", Kind.OBJECT, true, false),
            new Field("scope.team", Kind.STRING, true, true), new Field("scope.surface", Kind.STRING, true, true),
            new Field("scope.environment", Kind.STRING, true, true), new Field("expires", Kind.STRING, true, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/auth/tokens/{id}/rotate", "/v1/auth/tokens/" + tokenId + "/rotate", "", bearer,
        new JsonObject().put("expires", expires).put("retire_old_in", "1h"),
        List.of(new Field("expires", Kind.STRING, true, true), new Field("retire_old_in", Kind.STRING, false, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes", "/v1/nodes", "", bearer,
        new JsonObject().put("name", "hostile-new").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod")
            .put("tags", new JsonArray().add("tag:a")).put("region", "eu"),
        List.of(new Field("name", Kind.STRING, true, true), new Field("public_key", Kind.STRING, true, true),
            new Field("team", Kind.STRING, false, true), new Field("environment", Kind.STRING, false, true),
            new Field("tags", Kind.ARRAY, false, false), new Field("tags[0]", Kind.STRING, true, true),
            new Field("region", Kind.STRING, false, true))));
    JsonObject beat = Nodes.beat(2).put("public_key", Nodes.key()).put("relay", "fra1").put("services", new JsonArray().add("ssh:22"))
        .put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "active")))
        .put("command_results", new JsonArray().add(new JsonObject().put("id", "op_01m8000000000000000000000a")
            .put("status", "succeeded").put("detail", "done")));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/{id}/heartbeat", nodePath + "/heartbeat", "", agent, beat,
        List.of(new Field("endpoints", Kind.ARRAY, false, false), new Field("endpoints[0]", Kind.STRING, true, true),
            new Field("public_key", Kind.STRING, false, true), new Field("relay", Kind.STRING, false, true),
            new Field("routes", Kind.ARRAY, false, false), new Field("routes[0]", Kind.STRING, true, true),
            new Field("services", Kind.ARRAY, false, false), new Field("services[0]", Kind.STRING, true, true),
            new Field("ingress", Kind.ARRAY, false, false), new Field("ingress[0].name", Kind.STRING, true, true),
            new Field("ingress[0].state", Kind.STRING, true, true), new Field("telemetry", Kind.OBJECT, false, false),
            new Field("telemetry.agent_version", Kind.STRING, false, false),
            new Field("command_results", Kind.ARRAY, false, false), new Field("command_results[0].id", Kind.STRING, true, true),
            new Field("command_results[0].status", Kind.STRING, true, true), new Field("known", Kind.OBJECT, false, false),
            new Field("known.peers", Kind.NUMBER, false, false), new Field("known.acl", Kind.NUMBER, false, false))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/nodes/{id}/tags", nodePath + "/tags", "", bearer,
        new JsonObject().put("tags", new JsonArray().add("tag:a").add("tag:b")),
        List.of(new Field("tags", Kind.ARRAY, true, false), new Field("tags[0]", Kind.STRING, true, true),
            new Field("tags[1]", Kind.STRING, true, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/nodes/{id}/services", nodePath + "/services", "", bearer,
        new JsonObject().put("services", new JsonArray().add("ssh:22").add("web:443")),
        List.of(new Field("services", Kind.ARRAY, true, false), new Field("services[0]", Kind.STRING, true, true),
            new Field("services[1]", Kind.STRING, true, true))));
    // re-key and drain read no field; a body, when sent, must still be one JSON object
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/{id}/rekey", nodePath + "/rekey", "", bearer,
        new JsonObject().put("note", "hostile").put("why", new JsonArray().add("x")), List.of(Field.ignored("note"), Field.ignored("why[0]"))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/nodes/{id}/relay", nodePath + "/relay", "", bearer,
        new JsonObject().put("relay", otherRelay), List.of(new Field("relay", Kind.STRING, true, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress", nodePath + "/ingress", "", bearer,
        new JsonObject().put("name", "api").put("hostname", "api.example.net").put("port", 8443),
        List.of(new Field("name", Kind.STRING, true, true), new Field("hostname", Kind.STRING, true, true),
            new Field("port", Kind.NUMBER, true, false))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress/{name}/drain", nodePath + "/ingress/web/drain", "", bearer,
        new JsonObject().put("note", "hostile"), List.of(Field.ignored("note"))));
    List<Field> policyFields = List.of(Field.pointer("grants", Kind.ARRAY, true, false), Field.pointer("grants[0].src", Kind.ARRAY, true, false),
        Field.pointer("grants[0].src[0]", Kind.STRING, true, true), Field.pointer("grants[0].dst", Kind.ARRAY, true, false),
        Field.pointer("grants[0].dst[0]", Kind.STRING, true, true), Field.pointer("grants[0].ports", Kind.ARRAY, true, false),
        Field.pointer("grants[0].ports[0]", Kind.STRING, true, true), Field.pointer("tests", Kind.ARRAY, false, false),
        Field.pointer("tests[0].src", Kind.STRING, true, true), Field.pointer("tests[0].deny", Kind.ARRAY, false, false),
        Field.pointer("tests[0].deny[0]", Kind.STRING, true, true));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/acl", "/v1/acl", scope, bearer, policy, policyFields));
    List<Field> previewFields = new ArrayList<>(List.of(Field.pointer("policy", Kind.OBJECT, true, false),
        Field.pointer("src", Kind.STRING, false, true), Field.pointer("dst", Kind.STRING, false, true),
        Field.pointer("port", Kind.STRING, false, true)));
    for (Field f : policyFields) previewFields.add(Field.pointer("policy." + f.path(), f.kind(), f.refusesNull(), f.refusesControl()));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/acl/preview", "/v1/acl/preview", scope, bearer, preview(policy), previewFields));
    // restore takes no body; one sent must still be one JSON object (version 1 is not the current one: a restore would store version 3)
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/acl/versions/{version}/restore", "/v1/acl/versions/1/restore", scope, bearer,
        new JsonObject().put("note", "hostile"), List.of(Field.ignored("note"))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/api/v1/session", "/api/v1/session", "", nobody,
        new JsonObject().put("username", "root").put("password", PanelSession.PASSWORD),
        List.of(new Field("username", Kind.STRING, true, true), new Field("password", Kind.STRING, true, false))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/api/v1/users", "/api/v1/users", "", panel,
        new JsonObject().put("username", "hostile-user").put("password", PanelSession.PASSWORD).put("role", "viewer").put("team", "web")
            .put("environment", "prod"),
        List.of(new Field("username", Kind.STRING, true, true), new Field("password", Kind.STRING, true, true),
            new Field("role", Kind.STRING, true, true), new Field("team", Kind.STRING, true, true),
            new Field("environment", Kind.STRING, true, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PATCH, "/api/v1/users/{id}", "/api/v1/users/" + userId, "", panel,
        new JsonObject().put("role", "operator").put("disabled", true).put("password", PanelSession.PASSWORD + "!"),
        List.of(new Field("role", Kind.STRING, false, true), new Field("disabled", Kind.BOOLEAN, false, false),
            new Field("password", Kind.STRING, false, true))));

    String since = "2026-01-01T00:00:00Z";
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/auth/tokens", "/v1/auth/tokens", bearer,
        Map.of("limit", "5", "include_revoked", "true", "cursor", tokensCursor), "tokens", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/nodes", "/v1/nodes", bearer, Map.of("limit", "5", "status", "online",
        "tag", "tag:test", "name_prefix", "host", "agent_version", "1.4.0", "cursor", ""), "nodes", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/events", "/v1/events", bearer, Map.of("limit", "5", "type", "node.stale",
        "node_id", node.id(), "since", since, "cursor", ""), "events", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/audit", "/v1/audit", bearer, Map.of("limit", "5", "action", "token.create",
        "actor_id", "tok_1", "since", since, "cursor", ""), "audit", null));
    Map<String, String> scopeParams = Map.of("team", "web", "environment", "prod");
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl", "/v1/acl", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.PUT, "/v1/acl", "/v1/acl", bearer, scopeParams, null, policy));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl/versions", "/v1/acl/versions", bearer,
        Map.of("team", "web", "environment", "prod", "limit", "1", "cursor", aclCursor), "acl-versions:web/prod", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl/versions/{version}", "/v1/acl/versions/1", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/acl/versions/{version}/restore", "/v1/acl/versions/1/restore", bearer,
        scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/acl/preview", "/v1/acl/preview", bearer, scopeParams, null, preview(policy)));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/nodes/{id}/operations", nodePath + "/operations", bearer,
        Map.of("status", "pending", "limit", "1", "cursor", opsCursor), "operations:" + node.id(), null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/api/v1/users", "/api/v1/users", panel, Map.of("limit", "1", "cursor", usersCursor),
        "users", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/readyz", "/readyz", new Door(port, Map.of()), Map.of("exclude", "postgres"), null, null));

    Set<Integer> notFound = Set.of(400, 404, 405);
    idRoute(HttpMethod.GET, "/v1/auth/tokens/{id}", "id", "/v1/auth/tokens/{hostile}", bearer, notFound);
    idRoute(HttpMethod.DELETE, "/v1/auth/tokens/{id}", "id", "/v1/auth/tokens/{hostile}", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/auth/tokens/{id}/rotate", "id", "/v1/auth/tokens/{hostile}/rotate", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/nodes/{id}", "id", "/v1/nodes/{hostile}", bearer, notFound);
    idRoute(HttpMethod.DELETE, "/v1/nodes/{id}", "id", "/v1/nodes/{hostile}", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/nodes/{id}/peers", "id", "/v1/nodes/{hostile}/peers", bearer, notFound);
    idRoute(HttpMethod.PUT, "/v1/nodes/{id}/tags", "id", "/v1/nodes/{hostile}/tags", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/heartbeat", "id", "/v1/nodes/{hostile}/heartbeat", agent, Set.of(400, 403, 404));
    idRoute(HttpMethod.PUT, "/v1/nodes/{id}/services", "id", "/v1/nodes/{hostile}/services", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress", "id", "/v1/nodes/{hostile}/ingress", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress/{name}/drain", "id", "/v1/nodes/{hostile}/ingress/web/drain", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress/{name}/drain", "name", nodePath + "/ingress/{hostile}/drain", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/rekey", "id", "/v1/nodes/{hostile}/rekey", bearer, notFound);
    idRoute(HttpMethod.PUT, "/v1/nodes/{id}/relay", "id", "/v1/nodes/{hostile}/relay", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/nodes/{id}/operations", "id", "/v1/nodes/{hostile}/operations", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/operations/{id}", "id", "/v1/operations/{hostile}", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/acl/versions/{version}", "version", "/v1/acl/versions/{hostile}?" + scope, bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/acl/versions/{version}/restore", "version", "/v1/acl/versions/{hostile}/restore?" + scope, bearer,
        notFound);
    idRoute(HttpMethod.GET, "/api/v1/users/{id}", "id", "/api/v1/users/{hostile}", panel, notFound);
    idRoute(HttpMethod.PATCH, "/api/v1/users/{id}", "id", "/api/v1/users/{hostile}", panel, notFound);
    // the setup heartbeat reaches PostgreSQL (and a flush after it settles its mark) before the snapshots begin
    Await.until("the setup heartbeat in the row", () -> {
      try (var c = db.connect(); var st = c.createStatement();
           var rs = st.executeQuery("SELECT (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE id = '" + node.id() + "'")) {
        rs.next();
        return rs.getLong(1) == app.heartbeat().live().map().get(node.id()).heartbeatAt();
      }
    }, written -> written);
    Metrics.awaitFlushes(http, 2, app.coordinatorPort());
  }

  static JsonObject preview(JsonObject policy) {
    return new JsonObject().put("policy", policy).put("src", "tag:test").put("dst", "hostile-target").put("port", "tcp/22");
  }

  static void expect(int status, HttpResponse<Buffer> r) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
  }

  static void idRoute(HttpMethod method, String template, String param, String target, Door door, Set<Integer> statuses) {
    ID_ROUTES.add(new IdRoute(method, template, param, target, door, statuses));
  }

  @AfterContainer
  static void stop() throws Exception {
    try {
      if (sql != null) sql.close();
    } finally {
      if (cluster != null) cluster.close();
      if (logs != null) logs.close();
    }
  }

  @Property(tries = 1600) // 16 body routes (4 when 400 tries were chosen): about as many tries per route as then
  void everyHostileRequestIsAClear4xxThatChangesNothing(@ForAll("cases") Case c) throws Exception {
    Statistics.label("breakage").collect(c.breakage());
    check(c);
    // every kind of breakage is tried (checked by jqwik over all tries)
    Statistics.label("breakage").coverage(cov -> {
      for (Breakage k : Breakage.values()) cov.check(k).count(times -> times > 0);
    });
  }

  /**
   * Every route of the lists meets every kind of breakage that applies to it, every run: the body
   * routes each breakage of a body (deep nesting at 10,000 levels, as arrays and as objects; wrong
   * types, nulls, control characters and long arrays at every field that refuses them), every
   * parameter of the query routes a bad value, every path parameter a hostile id.
   */
  @Example
  void everyRouteMeetsEveryBreakage() throws Exception {
    String[] junk = {"j\u00fcnk \u2028/?#", "\"quoted\"\\", "../..", "\ud834\udd1e%zz", "a&b=c;d", "x"};
    int before = checked;
    int i = 0;
    for (BodyRoute route : BODY_ROUTES) {
      for (Breakage b : Breakage.values()) {
        if (QUERY.contains(b) || FRAMING.contains(b) || b == Breakage.HOSTILE_ID) continue;
        List<Field> fit = route.fields().stream().filter(eligible(b)).toList();
        if (fit.isEmpty()) continue;
        // what the route's own checks refuse, at every field; a breakage of the syntax, at one
        for (Field field : FIELD_CHECKS.contains(b) ? fit : List.of(fit.get(i % fit.size()))) {
          check(b == Breakage.DEEP_NESTING ? deep(route, field, 10_000, true) : body(b, route, field, i, junk[i % junk.length]));
          i++;
        }
      }
      check(deep(route, route.fields().get(i % route.fields().size()), 10_000, false)); // and as objects
    }
    for (QueryRoute route : QUERY_ROUTES) {
      List<String> names = new ArrayList<>(new TreeSet<>(route.params().keySet()));
      for (int p = 0; p < names.size(); p++) check(query(Breakage.BAD_QUERY_VALUE, route, p, i++, junk[i % junk.length]));
      check(query(Breakage.QUERY_SEMICOLON, route, i, i++, junk[i % junk.length]));
      check(query(Breakage.QUERY_REPEATED, route, i, i++, junk[i % junk.length]));
      if (route.list() != null) check(query(Breakage.FORGED_CURSOR, route, 0, i++, junk[i % junk.length]));
    }
    for (IdRoute route : ID_ROUTES) check(hostileId(route, junk[i++ % junk.length]));
    check(framing(Breakage.OVERSIZE_HEADERS, i++));
    check(framing(Breakage.OVERSIZE_URI, i++));
    System.out.printf("sweep: %d hostile requests to %d body routes, %d query routes and %d path parameters%n", checked - before,
        BODY_ROUTES.size(), QUERY_ROUTES.size(), ID_ROUTES.size());
  }

  /**
   * The lists above cannot drift from openapi.yaml: every operation of {@code /v1} and of the panel's
   * {@code /api/v1} (one document) that takes a body (POST, PUT, PATCH) is a body route here; every one
   * with query parameters is a query route with all of them; every path parameter gets a hostile id.
   * And nothing here names an operation the document does not have.
   */
  /** Two Authorization headers are one ambiguous credential: refused (401), never resolved by picking one, whichever is valid. */
  @Example
  void twoAuthorizationHeadersAreRefusedWhicheverIsValid() throws Exception {
    String valid = "Authorization: Bearer " + admin + "\r\n";
    String other = "Authorization: Bearer " + Tokens.issue(app, "web", "prod", Surface.MONITORING).jwt() + "\r\n";
    for (String twice : List.of(valid + "Authorization: Bearer forged\r\n", "Authorization: Bearer forged\r\n" + valid, valid + valid,
        valid + other, valid + "authorization: Bearer " + admin + "\r\n")) {
      for (String target : List.of("GET /v1/auth/whoami", "GET /v1/nodes/" + node.id())) {
        RawHttp.Answer a = RawHttp.exchange(port, RawHttp.ascii(target + " HTTP/1.1\r\nHost: x\r\n" + twice + "\r\n"));
        assertEquals(401, a.status(), target + " with " + twice.replace(admin, "<admin>") + a.body());
        assertEquals("unauthenticated", new JsonObject(a.body()).getString("code"), a.body());
        assertEquals("Bearer", a.header("WWW-Authenticate"));
      }
    }
    RawHttp.Answer once = RawHttp.exchange(port, RawHttp.ascii("GET /v1/auth/whoami HTTP/1.1\r\nHost: x\r\n" + valid + "\r\n"));
    assertEquals(200, once.status(), once.body());
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace");
  }

  @Example
  @SuppressWarnings("unchecked")
  void theRouteListsCoverEveryOperationThatTakesInput() {
    Map<String, Object> doc = new Yaml().load(http.get(port, Meshplane.OPENAPI_PATH).bodyAsString());
    Map<String, Object> shared = (Map<String, Object>) ((Map<String, Object>) doc.get("components")).get("parameters");
    Set<String> documented = new TreeSet<>();
    Set<String> missing = new TreeSet<>();
    for (Map.Entry<String, Object> path : ((Map<String, Object>) doc.get("paths")).entrySet()) {
      // the API's routes, and the probes that take input (/readyz?exclude=)
      if (!path.getKey().startsWith("/v1/") && !path.getKey().startsWith("/api/v1/") && !path.getKey().equals("/readyz")) continue;
      Map<String, Object> item = (Map<String, Object>) path.getValue();
      for (String m : List.of("get", "put", "post", "patch", "delete")) {
        Map<String, Object> op = (Map<String, Object>) item.get(m);
        if (op == null) continue;
        HttpMethod method = HttpMethod.valueOf(m.toUpperCase());
        String operation = method + " " + path.getKey();
        documented.add(operation);
        List<Map<String, Object>> params = new ArrayList<>();
        for (Object p : (List<Object>) item.getOrDefault("parameters", List.of())) params.add(resolve(shared, (Map<String, Object>) p));
        for (Object p : (List<Object>) op.getOrDefault("parameters", List.of())) params.add(resolve(shared, (Map<String, Object>) p));
        if (Set.of("put", "post", "patch").contains(m)
            && BODY_ROUTES.stream().noneMatch(r -> r.method() == method && r.template().equals(path.getKey()))) {
          missing.add(operation + ": not a body route");
        }
        Set<String> query = new TreeSet<>();
        for (Map<String, Object> p : params) {
          if ("query".equals(p.get("in"))) query.add((String) p.get("name"));
          if ("path".equals(p.get("in")) && ID_ROUTES.stream().noneMatch(r -> r.method() == method && r.template().equals(path.getKey())
              && r.param().equals(p.get("name")))) {
            missing.add(operation + ": no hostile id for {" + p.get("name") + "}");
          }
        }
        if (query.isEmpty()) continue;
        QueryRoute route = QUERY_ROUTES.stream().filter(r -> r.method() == method && r.template().equals(path.getKey())).findFirst()
            .orElse(null);
        if (route == null) {
          missing.add(operation + ": not a query route (parameters " + query + ")");
        } else if (!route.params().keySet().containsAll(query)) {
          query.removeAll(route.params().keySet());
          missing.add(operation + ": query parameters missing from its query route: " + query);
        }
      }
    }
    assertEquals(Set.of(), missing, "operations in openapi.yaml that take input and that this suite does not drive");
    Set<String> listed = new TreeSet<>();
    BODY_ROUTES.forEach(r -> listed.add(r.method() + " " + r.template()));
    QUERY_ROUTES.forEach(r -> listed.add(r.method() + " " + r.template()));
    ID_ROUTES.forEach(r -> listed.add(r.method() + " " + r.template()));
    listed.removeAll(documented);
    assertEquals(Set.of(), listed, "routes of this suite that openapi.yaml does not have");
    // and each concrete target is an instance of its operation
    for (BodyRoute r : BODY_ROUTES) assertTrue(instance(r.template(), r.path()), r.template() + " " + r.path());
    for (QueryRoute r : QUERY_ROUTES) assertTrue(instance(r.template(), r.path()), r.template() + " " + r.path());
    for (IdRoute r : ID_ROUTES) {
      String path = r.target().split("\\?")[0];
      assertTrue(instance(r.template(), path.replace("{hostile}", "x")), r.template() + " " + r.target());
      assertEquals(List.of(r.template().split("/")).indexOf("{" + r.param() + "}"), List.of(path.split("/")).indexOf("{hostile}"),
          "the hostile value goes where the parameter is: " + r.template() + " " + r.target());
    }
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> resolve(Map<String, Object> shared, Map<String, Object> p) {
    Object ref = p.get("$ref");
    if (ref == null) return p;
    String prefix = "#/components/parameters/";
    assertTrue(((String) ref).startsWith(prefix), ref.toString());
    return (Map<String, Object>) shared.get(((String) ref).substring(prefix.length()));
  }

  static boolean instance(String template, String path) {
    return path.matches(template.replaceAll("\\{[^}/]+}", "[^/?]+"));
  }

  /** Sends one case and checks the answer, the log, the records and that the replica still serves. */
  static void check(Case c) throws Exception {
    checked++;
    String before = snapshot();
    logs.clear();

    int status;
    JsonObject problem;
    String contentType;
    if (c.raw() != null) {
      RawHttp.Answer a = RawHttp.exchange(c.port(), c.raw());
      assertNotNull(a, c + ": an answer, not a silent close");
      status = a.status();
      contentType = a.header("content-type");
      problem = new JsonObject(a.body());
    } else {
      HttpRequest<Buffer> r = http.request(c.method(), c.port(), c.target());
      c.headers().forEach(r::putHeader);
      if (c.contentType() != null) r.putHeader("Content-Type", c.contentType());
      HttpResponse<Buffer> resp = http.send(r, c.body());
      status = resp.statusCode();
      contentType = resp.getHeader("Content-Type");
      String text = resp.bodyAsString();
      assertTrue(text != null && text.startsWith("{"), c + ": got " + status + " " + text);
      problem = new JsonObject(text);
    }
    assertTrue(c.statuses().contains(status), c + ": got " + status + " " + problem);
    assertEquals(Problems.MEDIA_TYPE, contentType, c.toString());
    assertEquals(status, problem.getInteger("status"), c.toString());
    assertNotNull(problem.getString("code"), c.toString());
    assertNotNull(problem.getString("request_id"), c.toString());
    if (c.field() != null) {
      boolean named = false;
      JsonArray errors = problem.getJsonArray("errors", new JsonArray());
      for (Object e : errors) {
        String f = ((JsonObject) e).getString("field");
        named |= c.exact() ? f.equals(c.field()) : f.startsWith(c.field());
      }
      assertTrue(named, c + ": the problem names " + c.field() + ": " + problem);
    }
    assertEquals(List.of(), logs.problems(), c + ": nothing at ERROR, no stack trace");
    assertEquals(before, snapshot(), c + ": nothing changed");
    assertEquals(200, http.get(c.port(), "/healthz").statusCode(), c + ": still serving");
  }

  /**
   * What a refused request must leave alone: tokens, nodes, the non-denial audit events, the ACL
   * policies (each team/environment's current version, and every version's content), the operations,
   * the panel's users, and the node's live entry. One round trip on one connection.
   */
  static String snapshot() throws Exception {
    String query = "SELECT 'tokens ' || (SELECT md5(coalesce(string_agg(concat_ws(',', id, name, team, environment, surface, node_id, "
        + "expires_at, revoked_at, retire_at, rotated_to), '|' ORDER BY id), '')) FROM tokens)"
        + " || '; nodes ' || (SELECT md5(coalesce(string_agg(concat_ws(',', id, name, team, environment, address, public_key, tags, relay, "
        + "services, endpoints, routes, reported_relay, telemetry, heartbeat_at), '|' ORDER BY id), '')) FROM nodes)"
        + " || '; audit ' || (SELECT count(*) FROM audit_events WHERE outcome <> 'denied')"
        + " || '; acl ' || (SELECT coalesce(string_agg(team || '/' || environment || ' v' || v, ', ' ORDER BY team, environment), 'none') "
        + "FROM (SELECT team, environment, max(version) AS v FROM acl_policies GROUP BY team, environment) p)"
        + " || ' ' || (SELECT md5(coalesce(string_agg(concat_ws(',', team, environment, version, policy, restored_from), '|' "
        + "ORDER BY team, environment, version), '')) FROM acl_policies)"
        + " || '; operations ' || (SELECT count(*) FROM operations)"
        + " || '; users ' || (SELECT count(*) FROM users) || ' ' || (SELECT md5(coalesce(string_agg(concat_ws(',', id, username, "
        + "password_hash, role, team, environment, disabled, updated_at, last_login_at), '|' ORDER BY id), '')) FROM users)";
    StringBuilder sb = new StringBuilder();
    try (Statement st = sql.createStatement(); ResultSet rs = st.executeQuery(query)) {
      rs.next();
      sb.append(rs.getString(1));
    }
    LiveNode live = app.heartbeat().live().map().get(node.id());
    sb.append("; live ").append(live == null ? "none" : live.heartbeatAt() + String.join(",", live.endpoints()) + live.telemetry());
    return sb.toString();
  }

  // ---- generation ---------------------------------------------------------------------------------

  @Provide
  Arbitrary<Case> cases() {
    Arbitrary<String> junk = Arbitraries.strings().all().ofMinLength(1).ofMaxLength(24);
    return Combinators.combine(Arbitraries.of(Breakage.values()), Arbitraries.integers().between(0, 1 << 20),
        Arbitraries.integers().between(0, 1 << 20), junk).as(HostileInputTest::build);
  }

  static Case build(Breakage b, int a, int n, String junk) {
    if (QUERY.contains(b)) {
      List<QueryRoute> fit = QUERY_ROUTES.stream().filter(r -> b != Breakage.FORGED_CURSOR || r.list() != null).toList();
      return query(b, fit.get(a % fit.size()), n / 7, n, junk);
    }
    if (b == Breakage.HOSTILE_ID) return hostileId(ID_ROUTES.get(a % ID_ROUTES.size()), junk);
    if (FRAMING.contains(b)) return framing(b, n);
    List<BodyRoute> fit = BODY_ROUTES.stream().filter(r -> r.fields().stream().anyMatch(eligible(b))).toList();
    BodyRoute route = fit.get(a % fit.size());
    List<Field> fields = route.fields().stream().filter(eligible(b)).toList();
    return body(b, route, fields.get(n % fields.size()), n, junk);
  }

  /** The fields breakage {@code b} can break: the route's own checks only see the fields it reads; the parser sees all. */
  static Predicate<Field> eligible(Breakage b) {
    return switch (b) {
      case WRONG_TYPE -> f -> f.checked() && !f.path().startsWith("telemetry."); // telemetry values may have any type
      case NULL_REQUIRED -> f -> f.checked() && f.refusesNull();
      case CONTROL_CHARACTER -> f -> f.checked() && f.refusesControl();
      case LONG_ARRAY -> f -> f.checked() && (f.kind() == Kind.ARRAY || f.kind() == Kind.STRING) && !f.path().startsWith("telemetry.");
      case NUL_CHARACTER, LONE_SURROGATE, BAD_UTF8 -> f -> f.kind() == Kind.STRING;
      default -> f -> true;
    };
  }

  static String what(HttpMethod method, String target) {
    return method + " " + target.replace(node.id(), "{node}").replace(tokenId, "{token}").replace(userId, "{user}");
  }

  /** Route {@code route}'s valid body broken by {@code b} at {@code field} (where the breakage has a place); {@code n} picks the variant. */
  static Case body(Breakage b, BodyRoute route, Field field, int n, String junk) {
    Set<Integer> bad = Set.of(400);
    String what = what(route.method(), route.target());
    switch (b) {
      case TRUNCATED -> {
        String text = route.body().encode();
        int cut = 1 + n % (text.length() - 1);
        String head = text.substring(0, cut);
        return body(b, what + " cut at " + cut, route, head, bad, fieldAtEnd(head), true);
      }
      case WRONG_TYPE -> {
        Object value = wrongValue(field.kind(), n, junk);
        return body(b, what + " " + field.path() + "=" + value, route, put(route.body(), field.path(), value).encode(), bad, field.name(),
            false);
      }
      case NULL_REQUIRED -> {
        return body(b, what + " " + field.path() + "=null", route, put(route.body(), field.path(), null).encode(), bad, field.name(), false);
      }
      case NUL_CHARACTER -> {
        String v = junk.substring(0, junk.length() / 2) + "\u0000" + junk.substring(junk.length() / 2);
        return body(b, what + " NUL in " + field.path(), route, put(route.body(), field.path(), v).encode(), bad, field.path(), true);
      }
      case CONTROL_CHARACTER -> {
        // one control character (C0, DEL or C1), in the middle of the field's valid value (so that nothing else is wrong with it) or alone
        char control = n % 34 < 31 ? (char) (1 + n % 34) : new char[] {'\u007f', '\u0085', '\u009b'}[n % 34 - 31];
        String v = (n / 34) % 2 == 0 && get(route.body(), field.path()) instanceof String valid && valid.length() > 1
            ? valid.substring(0, valid.length() / 2) + control + valid.substring(valid.length() / 2) : "x" + control + "y";
        return body(b, what + " " + String.format("U+%04X", (int) control) + " in " + field.path() + " (" + v.length() + " chars)", route,
            put(route.body(), field.path(), v).encode(), bad, field.name(), false);
      }
      case LONE_SURROGATE -> {
        String escape = n % 2 == 0 ? "\\ud83d" : "\\udc00";
        return body(b, what + " lone surrogate in " + field.path(), route, raw(route.body(), field.path(), "\"a" + escape + "b\""), bad,
            field.path(), true);
      }
      case BAD_UTF8 -> {
        byte[][] sequences = {{(byte) 0xC0, (byte) 0xAF}, {(byte) 0xE0, (byte) 0x80, (byte) 0xAF}, {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0xFF}, {(byte) 0xC3}};
        byte[] seq = sequences[n % sequences.length];
        String text = raw(route.body(), field.path(), "\"__BYTES__\"");
        int at = text.indexOf("__BYTES__");
        byte[] head = text.substring(0, at).getBytes(StandardCharsets.UTF_8);
        byte[] tail = text.substring(at + 9).getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[head.length + seq.length + tail.length];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(seq, 0, out, head.length, seq.length);
        System.arraycopy(tail, 0, out, head.length + seq.length, tail.length);
        return new Case(b, what + " malformed UTF-8 in " + field.path(), route.method(), route.door().port(), route.target(),
            "application/json", out, route.door().headers(), bad, StrictJson.BODY, true, null);
      }
      case DEEP_NESTING -> {
        return deep(route, field, 33 + n % 10_000, n % 2 == 0);
      }
      case HUGE_ARRAY -> {
        String huge = "[" + "1,".repeat(100_000 + n % 1000) + "1]";
        return body(b, what + " 100,000-element array at " + field.path(), route, raw(route.body(), field.path(), huge), Set.of(413), null,
            true);
      }
      case LONG_ARRAY -> {
        String items = "[" + "\"x\",".repeat(1000 + n % 9000) + "\"x\"]";
        return body(b, what + " long array at " + field.path(), route, raw(route.body(), field.path(), items), bad, field.name(), false);
      }
      case INFINITE_NUMBER -> {
        String[] numbers = {"1e999", "-1e999", "1E400", "9.9e9999"};
        String path = route.template().endsWith("/heartbeat") && n % 2 == 0 ? "telemetry.big" : field.path();
        return body(b, what + " " + numbers[n % 4] + " at " + path, route, raw(route.body(), path, numbers[n % 4]), bad, path, true);
      }
      case COMMENT -> {
        String text = route.body().encode();
        String comment = n % 2 == 0 ? "/* " + junk.replace("*/", "").replace("\u0000", "") + " */" : "// x\n"; // a NUL byte is refused first
        int at = text.indexOf(',') + 1;
        // the parser names where it stood when the comment began: the member or element before it
        return body(b, what + " with a comment", route, text.substring(0, at) + comment + text.substring(at), bad,
            fieldAtEnd(text.substring(0, at)), true);
      }
      case DUPLICATE_KEY -> {
        String top = field.path().split("[.\\[]")[0];
        String text = route.body().encode();
        String dup = "{\"" + top + "\":" + new JsonObject().put("v", route.body().getValue(top)).encode().substring(5);
        text = dup.substring(0, dup.length() - 1) + "," + text.substring(1);
        return body(b, what + " " + top + " twice", route, text, bad, top, true);
      }
      case TRAILING_GARBAGE -> {
        String[] tails = {"{}", "x", "[]", "\"", "0", "}"};
        return body(b, what + " with something after it", route, route.body().encode() + " " + tails[n % tails.length], bad,
            StrictJson.BODY, true);
      }
      case UTF16_BOM -> {
        boolean bom8 = n % 3 == 0;
        byte[] text = route.body().encode().getBytes(bom8 ? StandardCharsets.UTF_8 : n % 3 == 1 ? StandardCharsets.UTF_16LE : StandardCharsets.UTF_16BE);
        byte[] bom = bom8 ? new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF} : n % 3 == 1 ? new byte[] {(byte) 0xFF, (byte) 0xFE}
            : new byte[] {(byte) 0xFE, (byte) 0xFF};
        byte[] out = new byte[bom.length + text.length];
        System.arraycopy(bom, 0, out, 0, bom.length);
        System.arraycopy(text, 0, out, bom.length, text.length);
        return new Case(b, what + " with a byte order mark", route.method(), route.door().port(), route.target(), "application/json", out,
            route.door().headers(), bad, StrictJson.BODY, true, null);
      }
      case WRONG_MEDIA_TYPE -> {
        String[] types = {"multipart/form-data; boundary=XX", "application/x-www-form-urlencoded", "text/plain", "text/json",
            "application/json; charset=utf-16", "application/json; charset=iso-8859-1", "application/merge-patch+json",
            "application/xml", "application/json; boundary=1", "*/*", "", "application/jsonx", "application/json, text/plain"};
        String type = types[n % types.length];
        byte[] body = type.startsWith("multipart") ? ("--XX\r\nContent-Disposition: form-data; name=\"endpoints\"\r\n\r\n1.2.3.4:5\r\n--XX--\r\n")
            .getBytes(StandardCharsets.UTF_8) : route.body().encode().getBytes(StandardCharsets.UTF_8);
        return new Case(b, what + " as '" + type + "'", route.method(), route.door().port(), route.target(), type, body,
            route.door().headers(), Set.of(415), null, true, null);
      }
      case BAD_PATH_ESCAPE -> {
        String[] escapes = {"%zz", "%z", "%0g", "%00", "%C0%AF", "%ED%A0%80", "%FF", "%0A", "%7F", "%g1"};
        String path = route.path();
        int at = 1 + n % (path.length() - 1);
        String target = path.substring(0, at) + escapes[n % escapes.length] + path.substring(at)
            + (route.query().isEmpty() ? "" : "?" + route.query());
        return new Case(b, "path " + what(route.method(), target), route.method(), route.door().port(), target, "application/json",
            route.body().encode().getBytes(StandardCharsets.UTF_8), route.door().headers(), bad, RequestTarget.PATH, true, null);
      }
      case BAD_CHUNKING -> {
        String[] sizes = {"zz", "-1", "0x10", "+1", "ffffffffffffffffff", "g"};
        String size = sizes[n % sizes.length];
        StringBuilder head = new StringBuilder(route.method() + " " + route.target() + " HTTP/1.1\r\nHost: x\r\n");
        route.door().headers().forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
        return rawCase(b, what + " with chunk size '" + size + "'", route.door().port(), head + "Content-Type: application/json\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n{}\r\n0\r\n\r\n", Set.of(400));
      }
      default -> throw new IllegalStateException(b.toString());
    }
  }

  /**
   * {@code depth} levels of arrays ({@code [[[1]]]}) or objects ({@code {"a":{"a":1}}}) in place of
   * {@code field}: refused where the nesting passes {@value #MAX_DEPTH} levels, the problem naming
   * that place (the field, then one index or key for each level of the nesting inside it), or 413 when
   * the body is over the limit.
   */
  static Case deep(BodyRoute route, Field field, int depth, boolean arrays) {
    String deep = (arrays ? "[" : "{\"a\":").repeat(depth) + "1" + (arrays ? "]" : "}").repeat(depth);
    String text = raw(route.body(), field.path(), deep);
    // the levels around the field's value: the body, and one for each key or index in the field's path
    int around = field.path().split("[.\\[]").length;
    String named = field.path() + (arrays ? "[0]" : ".a").repeat(MAX_DEPTH - around);
    boolean tooLarge = text.getBytes(StandardCharsets.UTF_8).length > Routers.BODY_LIMIT;
    return body(Breakage.DEEP_NESTING, what(route.method(), route.target()) + " " + depth + " levels of " + (arrays ? "arrays" : "objects")
        + " at " + field.path(), route, text, Set.of(tooLarge ? 413 : 400), tooLarge ? null : named, true);
  }

  /**
   * The field the JSON parser names when the text stops (or stops making sense) right after
   * {@code head}: where it stands in the innermost open object or array. In an object that is the last
   * key read whole (none before the first: then the object's own place); in an array, the element
   * counted by the commas read. {@code (body)} when it stands at no field. (Written from the text, not
   * from the parser, so that the parser's answer is checked.)
   */
  static String fieldAtEnd(String head) {
    List<Object[]> open = new ArrayList<>(); // {'{', key} or {'[', index}
    boolean inString = false;
    boolean escaped = false;
    boolean key = false;
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < head.length(); i++) {
      char c = head.charAt(i);
      if (inString) {
        if (escaped) {
          escaped = false;
          text.append(c);
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          inString = false;
          if (key) open.get(open.size() - 1)[1] = text.toString();
        } else {
          text.append(c);
        }
        continue;
      }
      Object[] top = open.isEmpty() ? null : open.get(open.size() - 1);
      switch (c) {
        case '"' -> {
          inString = true;
          text.setLength(0);
          key = top != null && (char) top[0] == '{' && top[2] == Boolean.TRUE;
        }
        case '{' -> open.add(new Object[] {'{', null, Boolean.TRUE});
        case '[' -> open.add(new Object[] {'[', 0, Boolean.FALSE});
        case '}', ']' -> open.remove(open.size() - 1);
        case ',' -> {
          if ((char) top[0] == '[') top[1] = (Integer) top[1] + 1;
          else top[2] = Boolean.TRUE;
        }
        case ':' -> top[2] = Boolean.FALSE;
        default -> { }
      }
    }
    StringBuilder path = new StringBuilder();
    for (Object[] o : open) {
      if ((char) o[0] == '[') path.append('[').append(o[1]).append(']');
      else if (o[1] != null) path.append('.').append(o[1]);
    }
    return path.isEmpty() ? StrictJson.BODY : path.charAt(0) == '.' ? path.substring(1) : path.toString();
  }

  /** Route {@code route}'s valid query with parameter {@code param} (an index into the sorted names) broken by {@code b}. */
  static Case query(Breakage b, QueryRoute route, int param, int n, String junk) {
    List<String> names = new ArrayList<>(new TreeSet<>(route.params().keySet()));
    String name = b == Breakage.FORGED_CURSOR ? "cursor" : names.get(param % names.size());
    StringBuilder q = new StringBuilder();
    for (String p : names) {
      if (!q.isEmpty()) q.append('&');
      String value = route.params().get(p);
      if (p.equals(name)) {
        switch (b) {
          case BAD_QUERY_VALUE -> value = badValue(p, n, junk);
          case QUERY_SEMICOLON -> value = enc(value) + ";" + (n % 2 == 0 ? "limit=1" : "x");
          case QUERY_REPEATED -> value = enc(value) + "&" + p + "=" + enc(value);
          case FORGED_CURSOR -> value = forgedCursor(route, n, junk);
          default -> throw new IllegalStateException(b.toString());
        }
        q.append(p).append('=').append(value);
      } else {
        q.append(p).append('=').append(enc(value));
      }
    }
    String target = route.path() + "?" + q;
    byte[] body = route.body() == null ? null : route.body().encode().getBytes(StandardCharsets.UTF_8);
    return new Case(b, what(route.method(), target), route.method(), route.door().port(), target, body == null ? null : "application/json",
        body, route.door().headers(), Set.of(400), name, true, null);
  }

  /** A percent-encoded value that is wrong for parameter {@code p} whatever the junk. */
  static String badValue(String p, int n, String junk) {
    return switch (p) {
      case "limit" -> new String[] {"%EF%BC%91%EF%BC%90", "0", "1001", "-1", "%2B5", "1e2", "0x10", "5.0", "99999999999", enc(junk) + "x"}[n % 10];
      case "cursor" -> "%zz" + enc(junk);
      default -> n % 3 == 0 ? enc(junk) + "%0A" : n % 3 == 1 ? "%zz" : "%00" + enc(junk);
    };
  }

  static String forgedCursor(QueryRoute route, int n, String junk) {
    Cursors stranger = new Cursors(("stranger-key-" + n + "-0123456789abcdef").getBytes(StandardCharsets.UTF_8));
    String b64 = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(("[\"" + route.list() + "\",\"zz\"]").getBytes(StandardCharsets.UTF_8));
    String tampered = tokensCursor.substring(0, 4) + (tokensCursor.charAt(4) == 'A' ? 'B' : 'A') + tokensCursor.substring(5);
    String[] forged = {
        route.list().equals("tokens") ? enc(stranger.encode("tokens", List.of("tok_0"))) : enc(tokensCursor), // another list's
        enc(stranger.encode(route.list(), List.of("zz"))), // another installation's
        b64, b64 + ".AAAAAAAAAAAAAAAAAAAAAA", enc(tampered), enc(junk) + ".x", "a".repeat(600)};
    return forged[n % forged.length];
  }

  /** Route {@code route} with a hostile value (never {@code .} or {@code ..}) for its path parameter. */
  static Case hostileId(IdRoute route, String junk) {
    String id = "x" + enc(junk);
    String target = route.target().replace("{hostile}", id);
    boolean body = route.method() == HttpMethod.POST || route.method() == HttpMethod.PUT || route.method() == HttpMethod.PATCH;
    return new Case(Breakage.HOSTILE_ID, what(route.method(), target), route.method(), route.door().port(), target,
        body ? "application/json" : null, body ? "{}".getBytes(StandardCharsets.UTF_8) : null, route.door().headers(), route.statuses(),
        null, true, null);
  }

  /** Header fields or a request line over the limits, before any route is known. */
  static Case framing(Breakage b, int n) {
    if (b == Breakage.OVERSIZE_HEADERS) {
      String value = "a".repeat(HttpVerticle.MAX_HEADERS + 1 + n % 20_000);
      return rawCase(b, "a header of " + value.length() + " bytes", port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + value + "\r\n\r\n",
          Set.of(431));
    }
    String uri = "/v1/nodes?name_prefix=" + "a".repeat(HttpVerticle.MAX_REQUEST_LINE + n % 20_000);
    return rawCase(b, "a URI of " + uri.length() + " bytes", port, "GET " + uri + " HTTP/1.1\r\nHost: x\r\n\r\n", Set.of(414));
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static Object wrongValue(Kind kind, int n, String junk) {
    Object[] all = {junk, 42, 3.5, true, false, new JsonArray().add(junk), new JsonObject().put("k", junk), -7};
    for (int i = 0; i < all.length; i++) {
      Object v = all[(n + i) % all.length];
      boolean fits = switch (kind) {
        case STRING -> v instanceof String;
        case NUMBER -> v instanceof Integer i2 && i2 >= 0;
        case BOOLEAN -> v instanceof Boolean;
        case OBJECT -> v instanceof JsonObject;
        case ARRAY -> v instanceof JsonArray;
      };
      if (!fits) return v;
    }
    throw new IllegalStateException();
  }

  static Case body(Breakage b, String what, BodyRoute route, String text, Set<Integer> statuses, String field, boolean exact) {
    return new Case(b, what, route.method(), route.door().port(), route.target(), "application/json", text.getBytes(StandardCharsets.UTF_8),
        route.door().headers(), statuses, field, exact, null);
  }

  static Case rawCase(Breakage b, String what, int port, String request, Set<Integer> statuses) {
    return new Case(b, what, null, port, null, null, null, Map.of(), statuses, null, true, request.getBytes(StandardCharsets.ISO_8859_1));
  }

  /** The body's text with the value at {@code path} replaced by raw JSON text (which need not be valid). */
  static String raw(JsonObject body, String path, String rawValue) {
    String marker = "__HOSTILE_VALUE__";
    return put(body, path, marker).encode().replace("\"" + marker + "\"", rawValue);
  }

  /** The value at {@code path} ({@code a.b}, {@code a[0].b}) in {@code body}. */
  static Object get(JsonObject body, String path) {
    Object at = body;
    for (String part : path.split("\\.")) {
      int bracket = part.indexOf('[');
      at = ((JsonObject) at).getValue(bracket < 0 ? part : part.substring(0, bracket));
      if (bracket >= 0) at = ((JsonArray) at).getValue(Integer.parseInt(part.substring(bracket + 1, part.indexOf(']'))));
    }
    return at;
  }

  /** A copy of {@code body} with the value at {@code path} ({@code a.b}, {@code a[0].b}) set. */
  static JsonObject put(JsonObject body, String path, Object value) {
    JsonObject copy = body.copy();
    Object container = copy;
    String[] parts = path.split("\\.");
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i];
      int bracket = part.indexOf('[');
      String key = bracket < 0 ? part : part.substring(0, bracket);
      boolean last = i == parts.length - 1;
      JsonObject obj = (JsonObject) container;
      if (bracket < 0) {
        if (last) {
          obj.put(key, value);
        } else {
          if (!(obj.getValue(key) instanceof JsonObject)) obj.put(key, new JsonObject());
          container = obj.getJsonObject(key);
        }
      } else {
        int index = Integer.parseInt(part.substring(bracket + 1, part.indexOf(']')));
        JsonArray arr = obj.getJsonArray(key);
        if (last) {
          arr.set(index, value);
        } else {
          container = arr.getJsonObject(index);
        }
      }
    }
    return copy;
  }
}
