package io.meshplane.http;

import static io.meshplane.http.HostileReplica.BODY_ROUTES;
import static io.meshplane.http.HostileReplica.QUERY_ROUTES;
import static io.meshplane.http.HostileReplica.expect;
import static io.meshplane.http.HostileReplica.idRoute;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.meshplane.http.HostileInput.BodyRoute;
import io.meshplane.http.HostileInput.Door;
import io.meshplane.http.HostileInput.Field;
import io.meshplane.http.HostileInput.Kind;
import io.meshplane.http.HostileInput.QueryRoute;
import io.meshplane.testing.Http;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The traffic policies' routes (API.md §20) in the hostile-input sweep: two stored versions, then every route that takes input. */
final class HostileWafRoutes {
  private HostileWafRoutes() {}

  static void add(Http http, int port, String admin, String scope, Door bearer) {
    // traffic policies: two versions, the second the current one
    JsonObject waf = new JsonObject()
        .put("mode", "enforce")
        .put("rules", new JsonArray().add(new JsonObject().put("id", "no-admin").put("expression", "request.path.startsWith('/admin')")
            .put("action", new JsonObject().put("type", "deny").put("status", 403))))
        .put("tests", new JsonArray().add(new JsonObject().put("name", "admin is internal").put("expect", "deny")
            .put("request", new JsonObject().put("target", "/admin"))));
    expect(200, http.send(HttpMethod.PUT, port, "/v1/waf?" + scope, admin, waf));
    expect(200, http.send(HttpMethod.PUT, port, "/v1/waf?" + scope, admin, waf.copy().put("mode", "shadow")));
    String wafCursor = http.get(port, "/v1/waf/versions?limit=1&" + scope, admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(wafCursor);
    JsonObject wafPreview = new JsonObject().put("policy", waf).put("samples", new JsonArray().add(new JsonObject().put("target", "/x?q=1")));
    List<Field> wafFields = List.of(new Field("mode", Kind.STRING, true, true), new Field("rules", Kind.ARRAY, true, false),
        new Field("rules[0].id", Kind.STRING, true, true), new Field("rules[0].expression", Kind.STRING, true, true),
        new Field("rules[0].action", Kind.OBJECT, true, false), new Field("tests", Kind.ARRAY, true, false),
        new Field("tests[0].name", Kind.STRING, true, true), new Field("tests[0].expect", Kind.STRING, true, true),
        new Field("tests[0].request", Kind.OBJECT, true, false), new Field("tests[0].request.target", Kind.STRING, true, true));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/waf", "/v1/waf", scope, bearer, waf, wafFields));
    List<Field> wafPreviewFields = new ArrayList<>(List.of(new Field("policy", Kind.OBJECT, true, false),
        new Field("samples", Kind.ARRAY, true, false), new Field("samples[0].target", Kind.STRING, true, true)));
    for (Field f : wafFields) wafPreviewFields.add(new Field("policy." + f.path(), f.kind(), f.refusesNull(), f.refusesControl()));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/waf/preview", "/v1/waf/preview", scope, bearer, wafPreview, wafPreviewFields));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/waf/versions/{version}/restore", "/v1/waf/versions/1/restore", scope, bearer,
        new JsonObject().put("note", "hostile"), List.of(Field.ignored("note"))));
    Map<String, String> scopeParams = Map.of("team", "web", "environment", "prod");
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/waf", "/v1/waf", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.PUT, "/v1/waf", "/v1/waf", bearer, scopeParams, null, waf));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/waf/versions", "/v1/waf/versions", bearer,
        Map.of("team", "web", "environment", "prod", "limit", "1", "cursor", wafCursor), "waf-versions:web/prod", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/waf/versions/{version}", "/v1/waf/versions/1", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/waf/versions/{version}/restore", "/v1/waf/versions/1/restore", bearer,
        scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/waf/preview", "/v1/waf/preview", bearer, scopeParams, null, wafPreview));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/waf/samples", "/v1/waf/samples", bearer, scopeParams, null, null));
    Set<Integer> notFound = Set.of(400, 404, 405);
    idRoute(HttpMethod.GET, "/v1/waf/versions/{version}", "version", "/v1/waf/versions/{hostile}?" + scope, bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/waf/versions/{version}/restore", "version", "/v1/waf/versions/{hostile}/restore?" + scope, bearer,
        notFound);
  }
}
