package io.meshplane.http;

import static io.meshplane.http.HostileBodies.*;
import static io.meshplane.http.HostileInput.*;
import static io.meshplane.http.HostileReplica.*;
import static io.meshplane.http.HostileRequests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.RawHttp;
import io.meshplane.testing.Tokens;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
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
 *
 * <p>What they share lives beside them, by input surface: the vocabulary of cases in {@link HostileInput};
 * the replica, the route lists and the check of one case in {@link HostileReplica}; broken bodies in
 * {@link HostileBodies}; broken queries, path parameters and HTTP framing in {@link HostileRequests}.
 */
class HostileInputTest {
  @BeforeContainer
  static void startReplica() throws Exception {
    HostileReplica.start();
  }

  @AfterContainer
  static void stopReplica() throws Exception {
    HostileReplica.stop();
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
   * Endpoints a browser reaches by a redirect from elsewhere (the IdP's callback): a JSON problem would be
   * a dead end for the person, so what is wrong in their query is a redirect to the login page, which
   * explains the error code (only a value that does not decode at all is the query check's 400). {@link #theCallbackRedirectsEveryHostileQueryToTheLoginPage} drives them.
   */
  static final Set<String> REDIRECTS = Set.of("GET /api/v1/session/oidc/callback");
  /**
   * Routes whose 200 is a stream that does not end: their query (peers, acl) is attacked in
   * watch.WatchStreamTest (every bad value a 400 naming it), not by the query driver here.
   */
  static final Set<String> STREAMS = Set.of("GET /v1/nodes/{id}/watch");

  /**
   * Every parameter of the IdP's callback with a bad value, and an unknown one: a redirect to the login page
   * (or, for a value that is not even a decodable string, the query check's 400 naming it), no session, no
   * stack trace.
   */
  @Example
  void theCallbackRedirectsEveryHostileQueryToTheLoginPage() throws Exception {
    String[] junk = {"j\u00fcnk \u2028/?#", "\"quoted\"\\", "../..", "a&b=c;d"};
    List<String> params = List.of("code", "state", "error", "error_description", "error_uri", "iss", "session_state", "scope", "authuser",
        "prompt", "hd", "unknown");
    int n = 0;
    for (String p : params) {
      for (int k = 0; k < 3; k++, n++) {
        String rest = p.equals("state") ? "code=c" : p.equals("code") ? "state=s" : "state=s&code=c";
        String target = "/api/v1/session/oidc/callback?" + rest + "&" + p + "=" + badValue(p, k, junk[n % junk.length]);
        RawHttp.Answer a = RawHttp.exchange(panelPort, RawHttp.ascii("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
        if (a.status() == 400) {
          // a value no URL decoder accepts: the query's own check, a problem naming the parameter
          assertEquals(p, new JsonObject(a.body()).getJsonArray("errors").getJsonObject(0).getString("field"), target + " " + a.body());
        } else {
          assertEquals(302, a.status(), target + " " + a.body());
          assertTrue(a.header("Location").startsWith("/#/login?error="), target + " -> " + a.header("Location"));
        }
        assertTrue(!a.head().contains("meshplane_session="), "no session cookie: " + a.head());
      }
    }
    assertEquals(List.of(), logs.problems(), "no ERROR and no stack trace");
  }

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

  /**
   * The lists of {@link HostileReplica} cannot drift from openapi.yaml: every operation of {@code /v1} and of the panel's
   * {@code /api/v1} (one document) that takes a body (POST, PUT, PATCH) is a body route here; every one
   * with query parameters is a query route with all of them; every path parameter gets a hostile id.
   * And nothing here names an operation the document does not have.
   */
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
        if (query.isEmpty() || REDIRECTS.contains(operation) || STREAMS.contains(operation)) continue;
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
}
