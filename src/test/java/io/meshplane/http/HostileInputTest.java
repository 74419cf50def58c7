package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.testing.Http;
import io.meshplane.testing.LogCapture;
import io.meshplane.testing.Nodes;
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
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;

/**
 * Hostile input against every route that takes input, generated: each case is a valid request broken
 * in one way (the body's syntax, encoding, types, nesting, size or media type; the path or query's
 * escapes, separators, repeated or forged parameters; the HTTP framing itself). For every case: a 4xx
 * problem+json, naming the field where there is one; no 5xx; nothing at ERROR and no stack trace in
 * the log; no record changed (tokens, nodes, the audit trail's non-denial events, the node's live
 * entry); and the replica still serving. The statistics at the end show that every kind of breakage
 * was tried.
 */
class HostileInputTest {
  enum Breakage {
    TRUNCATED, WRONG_TYPE, NULL_REQUIRED, NUL_CHARACTER, CONTROL_CHARACTER, LONE_SURROGATE, BAD_UTF8, DEEP_NESTING, HUGE_ARRAY,
    LONG_ARRAY, INFINITE_NUMBER, COMMENT, DUPLICATE_KEY, TRAILING_GARBAGE, UTF16_BOM, WRONG_MEDIA_TYPE, BAD_PATH_ESCAPE,
    BAD_QUERY_VALUE, QUERY_SEMICOLON, QUERY_REPEATED, FORGED_CURSOR, HOSTILE_ID, OVERSIZE_HEADERS, OVERSIZE_URI, BAD_CHUNKING
  }

  enum Kind { STRING, NUMBER, OBJECT, ARRAY }

  /** A field of a body: its place ({@code scope.team}, {@code ingress[0].name}), JSON type, and what it refuses. */
  record Field(String path, Kind kind, boolean refusesNull, boolean refusesControl) {}

  /** A route that takes a body, with a valid body to break and its fields. */
  record BodyRoute(HttpMethod method, String path, String bearer, JsonObject body, List<Field> fields) {}

  /** A route that takes query parameters: each with a value that is valid for it. */
  record QueryRoute(String path, Map<String, String> params, String list) {}

  /** One hostile request and what the answer must be. */
  record Case(Breakage breakage, String what, HttpMethod method, String target, String contentType, byte[] body, String bearer,
      Set<Integer> statuses, String field, byte[] raw) {
    @Override
    public String toString() {
      return breakage + " " + what + " -> " + statuses + (field == null ? "" : " naming " + field);
    }
  }

  static LogCapture logs;
  static TestCluster cluster;
  static TestDatabase db;
  static Meshplane app;
  static Http http;
  static int port;
  static String admin;
  static Nodes.Enrolled node;
  static String tokenId;
  static String tokensCursor;
  static final List<BodyRoute> BODY_ROUTES = new ArrayList<>();
  static final List<QueryRoute> QUERY_ROUTES = new ArrayList<>();
  static final List<String> ID_ROUTES = new ArrayList<>();

  @BeforeContainer
  static void start() throws Exception {
    logs = LogCapture.attach();
    cluster = TestCluster.started(1);
    db = cluster.db();
    app = cluster.replica(0);
    port = app.coordinatorPort();
    http = cluster.http();
    admin = cluster.admin();
    node = Nodes.enroll(http, port, admin, "hostile-target", "web", "prod");
    assertEquals(200, http.send(HttpMethod.POST, port, "/v1/nodes/" + node.id() + "/heartbeat", node.token(), Nodes.beat(1)).statusCode());
    tokenId = Tokens.issue(app, "web", "prod", Surface.MONITORING).record().id();
    Tokens.issue(app, "web", "prod", Surface.PIPELINE);
    tokensCursor = http.get(port, "/v1/auth/tokens?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(tokensCursor);
    String expires = Instant.now().plus(Duration.ofDays(1)).toString();

    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/auth/tokens", admin,
        new JsonObject().put("name", "hostile").put("scope", new JsonObject().put("team", "web").put("surface", "monitoring")
            .put("environment", "prod")).put("expires", expires),
        List.of(new Field("name", Kind.STRING, true, true), new Field("scope", Kind.OBJECT, true, false),
            new Field("scope.team", Kind.STRING, true, true), new Field("scope.surface", Kind.STRING, true, true),
            new Field("scope.environment", Kind.STRING, true, true), new Field("expires", Kind.STRING, true, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/auth/tokens/" + tokenId + "/rotate", admin,
        new JsonObject().put("expires", expires).put("retire_old_in", "1h"),
        List.of(new Field("expires", Kind.STRING, true, true), new Field("retire_old_in", Kind.STRING, false, true))));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes", admin,
        new JsonObject().put("name", "hostile-new").put("public_key", Nodes.key()).put("team", "web").put("environment", "prod")
            .put("tags", new JsonArray().add("tag:a")),
        List.of(new Field("name", Kind.STRING, true, true), new Field("public_key", Kind.STRING, true, true),
            new Field("team", Kind.STRING, false, true), new Field("environment", Kind.STRING, false, true),
            new Field("tags", Kind.ARRAY, false, false), new Field("tags[0]", Kind.STRING, true, true))));
    JsonObject beat = Nodes.beat(2).put("public_key", Nodes.key()).put("relay", "fra1").put("services", new JsonArray().add("ssh:22"))
        .put("ingress", new JsonArray().add(new JsonObject().put("name", "web").put("state", "active")))
        .put("command_results", new JsonArray().add(new JsonObject().put("id", "op_01m8000000000000000000000a")
            .put("status", "succeeded").put("detail", "done")));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/" + node.id() + "/heartbeat", node.token(), beat,
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

    QUERY_ROUTES.add(new QueryRoute("/v1/auth/tokens", Map.of("limit", "5", "include_revoked", "true", "cursor", tokensCursor), "tokens"));
    QUERY_ROUTES.add(new QueryRoute("/v1/nodes", Map.of("limit", "5", "status", "online", "tag", "tag:test", "name_prefix", "host"), "nodes"));
    QUERY_ROUTES.add(new QueryRoute("/v1/events", Map.of("limit", "5", "type", "node.stale", "node_id", node.id(),
        "since", "2026-01-01T00:00:00Z"), "events"));
    QUERY_ROUTES.add(new QueryRoute("/v1/audit", Map.of("limit", "5", "action", "token.create", "actor_id", "tok_1",
        "since", "2026-01-01T00:00:00Z"), "audit"));
    ID_ROUTES.addAll(List.of("GET /v1/nodes/{id}", "DELETE /v1/nodes/{id}", "GET /v1/auth/tokens/{id}", "DELETE /v1/auth/tokens/{id}",
        "POST /v1/auth/tokens/{id}/rotate", "POST /v1/nodes/{id}/heartbeat"));
    Thread.sleep(2500); // the setup heartbeat reaches PostgreSQL before the snapshots begin
  }

  @AfterContainer
  static void stop() {
    if (cluster != null) cluster.close();
    if (logs != null) logs.close();
  }

  @Property(tries = 400)
  void everyHostileRequestIsAClear4xxThatChangesNothing(@ForAll("cases") Case c) throws Exception {
    Statistics.label("breakage").collect(c.breakage());
    String before = snapshot();
    logs.clear();

    int status;
    JsonObject problem;
    String contentType;
    if (c.raw() != null) {
      RawHttp.Answer a = RawHttp.exchange(port, c.raw());
      assertNotNull(a, c + ": an answer, not a silent close");
      status = a.status();
      contentType = a.header("content-type");
      problem = new JsonObject(a.body());
    } else {
      HttpRequest<Buffer> r = http.request(c.method(), port, c.target());
      if (c.bearer() != null) r.bearerTokenAuthentication(c.bearer());
      if (c.contentType() != null) r.putHeader("Content-Type", c.contentType());
      HttpResponse<Buffer> resp = http.send(r, c.body());
      status = resp.statusCode();
      contentType = resp.getHeader("Content-Type");
      problem = resp.bodyAsJsonObject();
    }
    assertTrue(c.statuses().contains(status), c + ": got " + status + " " + problem);
    assertEquals(Problems.MEDIA_TYPE, contentType, c.toString());
    assertEquals(status, problem.getInteger("status"), c.toString());
    assertNotNull(problem.getString("code"), c.toString());
    assertNotNull(problem.getString("request_id"), c.toString());
    if (c.field() != null) {
      boolean named = false;
      for (Object e : problem.getJsonArray("errors")) named |= ((JsonObject) e).getString("field").startsWith(c.field());
      assertTrue(named, c + ": the problem names " + c.field() + ": " + problem);
    }
    assertEquals(List.of(), logs.problems(), c + ": nothing at ERROR, no stack trace");
    assertEquals(before, snapshot(), c + ": nothing changed");
    assertEquals(200, http.get(port, "/healthz").statusCode(), c + ": still serving");
    // every kind of breakage is tried (checked by jqwik over all tries)
    Statistics.label("breakage").coverage(cov -> {
      for (Breakage k : Breakage.values()) cov.check(k).count(times -> times > 0);
    });
  }

  /** Tokens, nodes, the non-denial audit events and the live entry: what a refused request must leave alone. */
  static String snapshot() throws Exception {
    StringBuilder sb = new StringBuilder();
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      for (String sql : new String[] {
          "SELECT md5(coalesce(string_agg(concat_ws(',', id, name, team, environment, surface, node_id, expires_at, revoked_at, "
              + "retire_at, rotated_to), '|' ORDER BY id), '')) FROM tokens",
          "SELECT md5(coalesce(string_agg(concat_ws(',', id, name, team, environment, address, public_key, tags, relay, services, "
              + "endpoints, routes, reported_relay, telemetry, heartbeat_at), '|' ORDER BY id), '')) FROM nodes",
          "SELECT count(*) FROM audit_events WHERE outcome <> 'denied'"}) {
        try (ResultSet rs = st.executeQuery(sql)) {
          rs.next();
          sb.append(rs.getString(1)).append(';');
        }
      }
    }
    LiveNode live = app.heartbeat().live().map().get(node.id());
    sb.append(live == null ? "none" : live.heartbeatAt() + String.join(",", live.endpoints()) + live.telemetry());
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
    BodyRoute route = BODY_ROUTES.get(a % BODY_ROUTES.size());
    Field field = route.fields().get(n % route.fields().size());
    Set<Integer> bad = Set.of(400);
    String what = route.method() + " " + route.path().replace(node.id(), "{node}").replace(tokenId, "{token}");
    switch (b) {
      case TRUNCATED -> {
        String text = route.body().encode();
        int cut = 1 + n % (text.length() - 1);
        return body(b, what + " cut at " + cut, route, text.substring(0, cut), bad, null);
      }
      case WRONG_TYPE -> {
        Field f = firstWhere(route, n, x -> !x.path().startsWith("telemetry.")); // telemetry values may have any type
        Object value = wrongValue(f.kind(), n, junk);
        return body(b, what + " " + f.path() + "=" + value, route, put(route.body(), f.path(), value).encode(), bad, f.path());
      }
      case NULL_REQUIRED -> {
        Field f = firstWhere(route, n, Field::refusesNull);
        return body(b, what + " " + f.path() + "=null", route, put(route.body(), f.path(), null).encode(), bad, f.path());
      }
      case NUL_CHARACTER -> {
        Field f = firstWhere(route, n, x -> x.kind() == Kind.STRING);
        String v = junk.substring(0, junk.length() / 2) + "\u0000" + junk.substring(junk.length() / 2);
        return body(b, what + " NUL in " + f.path(), route, put(route.body(), f.path(), v).encode(), bad, f.path());
      }
      case CONTROL_CHARACTER -> {
        Field f = firstWhere(route, n, Field::refusesControl);
        String v = "x" + (char) (1 + n % 31) + "y";
        return body(b, what + " control character in " + f.path(), route, put(route.body(), f.path(), v).encode(), bad, f.path());
      }
      case LONE_SURROGATE -> {
        Field f = firstWhere(route, n, x -> x.kind() == Kind.STRING);
        String escape = n % 2 == 0 ? "\\ud83d" : "\\udc00";
        return body(b, what + " lone surrogate in " + f.path(), route, raw(route.body(), f.path(), "\"a" + escape + "b\""), bad, f.path());
      }
      case BAD_UTF8 -> {
        Field f = firstWhere(route, n, x -> x.kind() == Kind.STRING);
        byte[][] sequences = {{(byte) 0xC0, (byte) 0xAF}, {(byte) 0xE0, (byte) 0x80, (byte) 0xAF}, {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0xFF}, {(byte) 0xC3}};
        byte[] seq = sequences[n % sequences.length];
        String text = raw(route.body(), f.path(), "\"__BYTES__\"");
        int at = text.indexOf("__BYTES__");
        byte[] head = text.substring(0, at).getBytes(StandardCharsets.UTF_8);
        byte[] tail = text.substring(at + 9).getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[head.length + seq.length + tail.length];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(seq, 0, out, head.length, seq.length);
        System.arraycopy(tail, 0, out, head.length + seq.length, tail.length);
        return new Case(b, what + " malformed UTF-8 in " + f.path(), route.method(), route.path(), "application/json", out, route.bearer(),
            bad, StrictJson.BODY, null);
      }
      case DEEP_NESTING -> {
        int depth = 33 + n % 10_000;
        String deep = (n % 2 == 0 ? "[" : "{\"a\":").repeat(depth) + "1" + (n % 2 == 0 ? "]" : "}").repeat(depth);
        return body(b, what + " " + depth + " levels at " + field.path(), route, raw(route.body(), field.path(), deep),
            Set.of(400, 413), null);
      }
      case HUGE_ARRAY -> {
        String huge = "[" + "1,".repeat(100_000 + n % 1000) + "1]";
        return body(b, what + " 100,000-element array at " + field.path(), route, raw(route.body(), field.path(), huge), Set.of(413), null);
      }
      case LONG_ARRAY -> {
        Field f = firstWhere(route, n, x -> (x.kind() == Kind.ARRAY || x.kind() == Kind.STRING) && !x.path().startsWith("telemetry."));
        String items = "[" + "\"x\",".repeat(1000 + n % 9000) + "\"x\"]";
        return body(b, what + " long array at " + f.path(), route, raw(route.body(), f.path(), items), bad, f.path());
      }
      case INFINITE_NUMBER -> {
        String[] numbers = {"1e999", "-1e999", "1E400", "9.9e9999"};
        String path = route.path().endsWith("/heartbeat") && n % 2 == 0 ? "telemetry.big" : field.path();
        return body(b, what + " " + numbers[n % 4] + " at " + path, route, raw(route.body(), path, numbers[n % 4]), bad, path);
      }
      case COMMENT -> {
        String text = route.body().encode();
        String comment = n % 2 == 0 ? "/* " + junk.replace("*/", "") + " */" : "// x\n";
        int at = text.indexOf(',') + 1;
        return body(b, what + " with a comment", route, text.substring(0, at) + comment + text.substring(at), bad, null);
      }
      case DUPLICATE_KEY -> {
        String top = route.fields().get(n % route.fields().size()).path().split("[.\\[]")[0];
        String text = route.body().encode();
        String dup = "{\"" + top + "\":" + new JsonObject().put("v", route.body().getValue(top)).encode().substring(5);
        text = dup.substring(0, dup.length() - 1) + "," + text.substring(1);
        return body(b, what + " " + top + " twice", route, text, bad, top);
      }
      case TRAILING_GARBAGE -> {
        String[] tails = {"{}", "x", "[]", "\"", "0", "}"};
        return body(b, what + " with something after it", route, route.body().encode() + " " + tails[n % tails.length], bad, null);
      }
      case UTF16_BOM -> {
        boolean bom8 = n % 3 == 0;
        byte[] text = route.body().encode().getBytes(bom8 ? StandardCharsets.UTF_8 : n % 3 == 1 ? StandardCharsets.UTF_16LE : StandardCharsets.UTF_16BE);
        byte[] bom = bom8 ? new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF} : n % 3 == 1 ? new byte[] {(byte) 0xFF, (byte) 0xFE}
            : new byte[] {(byte) 0xFE, (byte) 0xFF};
        byte[] out = new byte[bom.length + text.length];
        System.arraycopy(bom, 0, out, 0, bom.length);
        System.arraycopy(text, 0, out, bom.length, text.length);
        return new Case(b, what + " with a byte order mark", route.method(), route.path(), "application/json", out, route.bearer(),
            bad, StrictJson.BODY, null);
      }
      case WRONG_MEDIA_TYPE -> {
        String[] types = {"multipart/form-data; boundary=XX", "application/x-www-form-urlencoded", "text/plain", "text/json",
            "application/json; charset=utf-16", "application/json; charset=iso-8859-1", "application/merge-patch+json",
            "application/xml", "application/json; boundary=1", "*/*", "", "application/jsonx", "application/json, text/plain"};
        String type = types[n % types.length];
        byte[] body = type.startsWith("multipart") ? ("--XX\r\nContent-Disposition: form-data; name=\"endpoints\"\r\n\r\n1.2.3.4:5\r\n--XX--\r\n")
            .getBytes(StandardCharsets.UTF_8) : route.body().encode().getBytes(StandardCharsets.UTF_8);
        return new Case(b, what + " as '" + type + "'", route.method(), route.path(), type, body, route.bearer(), Set.of(415), null, null);
      }
      case BAD_PATH_ESCAPE -> {
        String[] escapes = {"%zz", "%z", "%0g", "%00", "%C0%AF", "%ED%A0%80", "%FF", "%0A", "%7F", "%g1"};
        String path = route.path();
        int at = 1 + n % (path.length() - 1);
        String target = path.substring(0, at) + escapes[n % escapes.length] + path.substring(at);
        return new Case(b, "path " + target.replace(node.id(), "{node}"), route.method(), target, "application/json",
            route.body().encode().getBytes(StandardCharsets.UTF_8), route.bearer(), bad, RequestTarget.PATH, null);
      }
      case BAD_QUERY_VALUE, QUERY_SEMICOLON, QUERY_REPEATED, FORGED_CURSOR -> {
        return query(b, n, junk);
      }
      case HOSTILE_ID -> {
        String[] route2 = ID_ROUTES.get(n % ID_ROUTES.size()).split(" ");
        String id = "x" + URLEncoder.encode(junk, StandardCharsets.UTF_8).replace("+", "%20"); // never "." or ".."
        String target = route2[1].replace("{id}", id);
        HttpMethod m = HttpMethod.valueOf(route2[0]);
        boolean heartbeat = target.endsWith("/heartbeat");
        return new Case(b, m + " " + target, m, target, m == HttpMethod.POST ? "application/json" : null,
            m == HttpMethod.POST ? "{}".getBytes(StandardCharsets.UTF_8) : null, heartbeat ? node.token() : admin,
            heartbeat ? Set.of(400, 403, 404) : Set.of(400, 404, 405), null, null);
      }
      case OVERSIZE_HEADERS -> {
        String value = "a".repeat(HttpVerticle.MAX_HEADERS + 1 + n % 20_000);
        return rawCase(b, "a header of " + value.length() + " bytes", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + value + "\r\n\r\n",
            Set.of(431));
      }
      case OVERSIZE_URI -> {
        String uri = "/v1/nodes?name_prefix=" + "a".repeat(HttpVerticle.MAX_REQUEST_LINE + n % 20_000);
        return rawCase(b, "a URI of " + uri.length() + " bytes", "GET " + uri + " HTTP/1.1\r\nHost: x\r\n\r\n", Set.of(414));
      }
      case BAD_CHUNKING -> {
        String[] sizes = {"zz", "-1", "0x10", "+1", "ffffffffffffffffff", "g"};
        String size = sizes[n % sizes.length];
        return rawCase(b, "chunk size '" + size + "'", route.method() + " " + route.path() + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + route.bearer() + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\n{}\r\n0\r\n\r\n",
            Set.of(400));
      }
      default -> throw new IllegalStateException(b.toString());
    }
  }

  static Case query(Breakage b, int n, String junk) {
    QueryRoute route = QUERY_ROUTES.get(n % QUERY_ROUTES.size());
    List<String> names = new ArrayList<>(route.params().keySet());
    names.sort(null);
    String name = names.get((n / 7) % names.size());
    StringBuilder q = new StringBuilder();
    String field = name;
    for (String p : names) {
      if (!q.isEmpty()) q.append('&');
      String value = route.params().get(p);
      if (p.equals(name)) {
        switch (b) {
          case BAD_QUERY_VALUE -> value = badValue(p, n, junk);
          case QUERY_SEMICOLON -> value = value + ";" + (n % 2 == 0 ? "limit=1" : "x");
          case QUERY_REPEATED -> value = value + "&" + p + "=" + enc(route.params().get(p));
          case FORGED_CURSOR -> {
            field = "cursor";
            p = "cursor";
            value = forgedCursor(route, n, junk);
          }
          default -> throw new IllegalStateException();
        }
        q.append(p).append('=').append(value);
      } else if (!(b == Breakage.FORGED_CURSOR && p.equals("cursor"))) {
        q.append(p).append('=').append(enc(value));
      }
    }
    String target = route.path() + "?" + q;
    return new Case(b, "GET " + target.replace(node.id(), "{node}"), HttpMethod.GET, target, null, null, admin, Set.of(400), field, null);
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
        case OBJECT -> v instanceof JsonObject;
        case ARRAY -> v instanceof JsonArray;
      };
      if (!fits) return v;
    }
    throw new IllegalStateException();
  }

  static Field firstWhere(BodyRoute route, int n, java.util.function.Predicate<Field> p) {
    List<Field> fit = route.fields().stream().filter(p).toList();
    if (fit.isEmpty()) fit = route.fields().stream().filter(f -> f.kind() == Kind.STRING).toList();
    return fit.get(n % fit.size());
  }

  static Case body(Breakage b, String what, BodyRoute route, String text, Set<Integer> statuses, String field) {
    return new Case(b, what, route.method(), route.path(), "application/json", text.getBytes(StandardCharsets.UTF_8), route.bearer(),
        statuses, field, null);
  }

  static Case rawCase(Breakage b, String what, String request, Set<Integer> statuses) {
    return new Case(b, what, null, null, null, null, null, statuses, null, request.getBytes(StandardCharsets.ISO_8859_1));
  }

  /** The body's text with the value at {@code path} replaced by raw JSON text (which need not be valid). */
  static String raw(JsonObject body, String path, String rawValue) {
    String marker = "__HOSTILE_VALUE__";
    return put(body, path, marker).encode().replace("\"" + marker + "\"", rawValue);
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
