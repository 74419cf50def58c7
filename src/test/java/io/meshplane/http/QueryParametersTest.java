package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.yaml.snakeyaml.Yaml;

/**
 * A query parameter a route does not take is a 400 naming it (a misspelt filter must not silently
 * list everything), on both APIs; and what each route takes is exactly what the OpenAPI document says.
 */
@Timeout(120)
class QueryParametersTest {
  static TestCluster cluster;
  static Meshplane app;
  static Http http;
  static String admin;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1);
    app = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  /** Every declared route of both APIs against its operation in the document (a panel mirror: the /v1 one). */
  @Test
  @SuppressWarnings("unchecked")
  void everyRouteTakesExactlyTheQueryParametersTheDocumentLists() {
    Map<String, Object> doc = new Yaml().load(http.get(app.coordinatorPort(), Meshplane.OPENAPI_PATH).bodyAsString());
    Map<String, Object> shared = (Map<String, Object>) ((Map<String, Object>) doc.get("components")).get("parameters");
    Map<String, Set<String>> documented = new TreeMap<>();
    for (Map.Entry<String, Object> path : ((Map<String, Object>) doc.get("paths")).entrySet()) {
      Map<String, Object> item = (Map<String, Object>) path.getValue();
      for (Map.Entry<String, Object> op : item.entrySet()) {
        if (op.getKey().equals("parameters")) continue;
        List<Object> params = new ArrayList<>((List<Object>) item.getOrDefault("parameters", List.of()));
        params.addAll((List<Object>) ((Map<String, Object>) op.getValue()).getOrDefault("parameters", List.of()));
        Set<String> query = new TreeSet<>();
        for (Object p : params) {
          Map<String, Object> param = (Map<String, Object>) p;
          if (param.containsKey("$ref")) {
            String ref = (String) param.get("$ref");
            param = (Map<String, Object>) shared.get(ref.substring(ref.lastIndexOf('/') + 1));
          }
          if ("query".equals(param.get("in"))) query.add((String) param.get("name"));
        }
        documented.put(op.getKey().toUpperCase() + " " + path.getKey(), query);
      }
    }
    Map<String, Set<String>> declared = new TreeMap<>();
    Map<String, Set<String>> expected = new TreeMap<>();
    for (Api api : app.apis()) {
      for (Api.Declared d : api.declared()) {
        String route = d.method().name() + " " + d.path();
        String operation = documented.containsKey(route) ? route
            : d.method().name() + " " + Meshplane.COORDINATOR_PREFIX + d.path().substring(api.prefix().length());
        assertTrue(documented.containsKey(operation), route + " has no operation in the document");
        declared.put(route, d.query().names());
        expected.put(route, documented.get(operation));
      }
    }
    assertEquals(expected, declared);
    assertTrue(declared.get("GET /api/v1/nodes").contains("name_prefix"), declared.toString()); // the panel's mirrors were compared
  }

  @Test
  void anUnknownParameterIs400NamingItAndKnownOnesWorkAsBefore() {
    int port = app.coordinatorPort();
    HttpResponse<Buffer> typo = http.get(port, "/v1/nodes?stauts=stale", admin);
    assertEquals(List.of("stauts"), fields(typo, 400));
    assertTrue(typo.bodyAsJsonObject().getString("detail").startsWith("stauts: unknown query parameter"), typo.bodyAsString());
    // every unknown one is named, in one answer; the known one beside them is not
    assertEquals(List.of("bogus", "stauts"), sorted(fields(http.get(port, "/v1/nodes?status=stale&stauts=stale&bogus=1", admin), 400)));
    // before the credential is looked at, like the other checks of the request's shape
    assertEquals(List.of("stauts"), fields(http.get(port, "/v1/nodes?stauts=stale"), 400));
    // a route that takes none, a route with a path id, the document itself
    assertEquals(List.of("verbose"), fields(http.get(port, "/v1/auth/whoami?verbose=1", admin), 400));
    assertEquals(List.of("limit"), fields(http.get(port, "/v1/nodes/nd_01m8000000000000000000000z?limit=1", admin), 400));
    assertEquals(List.of("x"), fields(http.get(port, Meshplane.OPENAPI_PATH + "?x=1"), 400));
    assertEquals(List.of("team"), fields(http.send(HttpMethod.POST, port, "/v1/nodes/nd_01m8000000000000000000000z/heartbeat?team=web",
        admin, new JsonObject()), 400));
    // names are compared as sent: a parameter differs from a declared one by its case
    assertEquals(List.of("Status"), fields(http.get(port, "/v1/nodes?Status=stale", admin), 400));

    // the known parameters as before: a filter, a page, a bad value named, a repeated parameter refused
    HttpResponse<Buffer> stale = http.get(port, "/v1/nodes?status=stale&limit=5", admin);
    assertEquals(200, stale.statusCode(), stale.bodyAsString());
    assertEquals(new JsonArray(), stale.bodyAsJsonObject().getJsonArray("items"));
    assertEquals(List.of("status"), fields(http.get(port, "/v1/nodes?status=gone", admin), 400));
    assertEquals(List.of("limit"), fields(http.get(port, "/v1/nodes?limit=1&limit=2", admin), 400));
    assertEquals(200, http.get(port, "/v1/acl?team=web&environment=prod", admin).statusCode());
    assertEquals(List.of("tema"), fields(http.get(port, "/v1/acl?tema=web&environment=prod", admin), 400));
    // the probes keep taking what they took
    assertEquals(200, http.get(port, "/readyz?exclude=cluster").statusCode());

    // the panel's mirror of the same route, and its own routes
    PanelSession.user(app, "querier", "admin", "*", "*");
    PanelSession person = PanelSession.signIn(http, app.panelPort(), "querier");
    assertEquals(List.of("stauts"), fields(panel(person, "/api/v1/nodes?stauts=stale"), 400));
    assertEquals(200, panel(person, "/api/v1/nodes?status=stale").statusCode());
    assertEquals(List.of("page"), fields(panel(person, "/api/v1/users?page=2"), 400));
    assertEquals(List.of("x"), fields(panel(person, "/api/v1/overview?x=1"), 400));
  }

  private static HttpResponse<Buffer> panel(PanelSession session, String path) {
    return http.send(http.request(HttpMethod.GET, app.panelPort(), path).putHeader("Cookie", session.cookie()));
  }

  /** The fields a 400 problem names (asserting the status and the house shape). */
  private static List<String> fields(HttpResponse<Buffer> r, int status) {
    assertEquals(status, r.statusCode(), r.bodyAsString());
    assertEquals(Problems.MEDIA_TYPE, r.getHeader("Content-Type"));
    JsonObject body = r.bodyAsJsonObject();
    assertEquals("invalid_request", body.getString("code"), r.bodyAsString());
    List<String> out = new ArrayList<>();
    for (Object e : body.getJsonArray("errors")) out.add(((JsonObject) e).getString("field"));
    return out;
  }

  private static List<String> sorted(List<String> names) {
    return new ArrayList<>(new TreeSet<>(names));
  }
}
