package io.meshplane.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Grants;
import io.meshplane.access.Permission;
import io.meshplane.access.Role;
import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.http.Api;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * API.md §4 as a table: every surface against every /v1 route that exists. A route added without a row
 * here, or mounted without a declared permission, fails this test.
 */
@Timeout(180)
class PermissionMatrixTest {
  /** The contract's route → permission table; null = any valid token. */
  static final Map<String, Permission> EXPECTED = new LinkedHashMap<>();
  /** The panel's routes that need a session (null = any signed-in person); its login takes no credential. */
  static final Map<String, Permission> PANEL = new LinkedHashMap<>();
  /** The ways to sign in: the password login, and single sign-on's information, start and callback. */
  static final Set<String> PANEL_LOGIN = Set.of("POST /api/v1/session", "GET /api/v1/session/oidc", "GET /api/v1/session/oidc/start",
      "GET /api/v1/session/oidc/callback");

  static {
    EXPECTED.put("POST /v1/auth/tokens", Permission.TOKENS_WRITE);
    EXPECTED.put("GET /v1/auth/tokens", Permission.TOKENS_READ);
    EXPECTED.put("GET /v1/auth/tokens/{id}", Permission.TOKENS_READ);
    EXPECTED.put("DELETE /v1/auth/tokens/{id}", Permission.TOKENS_WRITE);
    EXPECTED.put("POST /v1/auth/tokens/{id}/rotate", Permission.TOKENS_WRITE);
    EXPECTED.put("GET /v1/auth/whoami", null);
    EXPECTED.put("GET /v1/audit", Permission.AUDIT_READ);
    EXPECTED.put("POST /v1/nodes", Permission.NODES_ENROLL);
    EXPECTED.put("GET /v1/nodes", Permission.NODES_READ);
    EXPECTED.put("GET /v1/nodes/{id}", Permission.NODES_READ);
    EXPECTED.put("DELETE /v1/nodes/{id}", Permission.NODES_OPERATE);
    EXPECTED.put("POST /v1/nodes/{id}/heartbeat", Permission.HEARTBEAT);
    EXPECTED.put("GET /v1/nodes/{id}/watch", Permission.HEARTBEAT);
    EXPECTED.put("GET /v1/events", Permission.EVENTS_READ);
    EXPECTED.put("PUT /v1/nodes/{id}/tags", Permission.NODES_OPERATE);
    EXPECTED.put("POST /v1/nodes/bulk", Permission.NODES_OPERATE);
    EXPECTED.put("GET /v1/relays", Permission.NODES_READ);
    EXPECTED.put("PUT /v1/nodes/{id}/services", Permission.NODES_SERVICES);
    EXPECTED.put("PUT /v1/nodes/{id}/relay", Permission.NODES_OPERATE);
    EXPECTED.put("POST /v1/nodes/{id}/rekey", Permission.NODES_OPERATE);
    EXPECTED.put("POST /v1/nodes/{id}/ingress", Permission.NODES_OPERATE);
    EXPECTED.put("POST /v1/nodes/{id}/ingress/{name}/drain", Permission.NODES_OPERATE);
    EXPECTED.put("GET /v1/nodes/{id}/operations", Permission.NODES_READ);
    EXPECTED.put("GET /v1/operations", Permission.NODES_READ);
    EXPECTED.put("GET /v1/operations/{id}", Permission.NODES_READ);
    EXPECTED.put("GET /v1/acl", Permission.ACL_READ);
    EXPECTED.put("PUT /v1/acl", Permission.ACL_WRITE);
    EXPECTED.put("GET /v1/acl/versions", Permission.ACL_READ);
    EXPECTED.put("GET /v1/acl/versions/{version}", Permission.ACL_READ);
    EXPECTED.put("POST /v1/acl/versions/{version}/restore", Permission.ACL_WRITE);
    EXPECTED.put("POST /v1/acl/preview", Permission.ACL_READ);
    EXPECTED.put("POST /v1/acl/impact", Permission.ACL_READ);
    EXPECTED.put("GET /v1/nodes/{id}/peers", Permission.NODES_READ);
    EXPECTED.put("GET /v1/ingress/routes", Permission.INGRESS_READ);
    EXPECTED.put("GET /v1/ingress/routes/{id}", Permission.INGRESS_READ);
    EXPECTED.put("POST /v1/ingress/routes", Permission.INGRESS_WRITE);
    EXPECTED.put("PUT /v1/ingress/routes/{id}", Permission.INGRESS_WRITE);
    EXPECTED.put("DELETE /v1/ingress/routes/{id}", Permission.INGRESS_WRITE);
    EXPECTED.put("GET /v1/waf", Permission.WAF_READ);
    EXPECTED.put("PUT /v1/waf", Permission.WAF_WRITE);
    EXPECTED.put("GET /v1/waf/versions", Permission.WAF_READ);
    EXPECTED.put("GET /v1/waf/versions/{version}", Permission.WAF_READ);
    EXPECTED.put("POST /v1/waf/versions/{version}/restore", Permission.WAF_WRITE);
    EXPECTED.put("POST /v1/waf/preview", Permission.WAF_READ);
    EXPECTED.put("GET /v1/waf/samples", Permission.WAF_READ);
    EXPECTED.put("GET /v1/meshca/bundle", Permission.MESHCA_READ);
    EXPECTED.put("GET /v1/meshca/crl", Permission.MESHCA_READ);
    EXPECTED.put("GET /v1/meshca/certificates", Permission.MESHCA_READ);
    EXPECTED.put("GET /v1/meshca/certificates/{serial}", Permission.MESHCA_READ);
    EXPECTED.put("POST /v1/meshca/certificates/{serial}/revoke", Permission.MESHCA_REVOKE);
    EXPECTED.put("GET /v1/meshca/authorities", Permission.MESHCA_READ);
    EXPECTED.put("GET /v1/meshca/summary", Permission.MESHCA_READ);
    EXPECTED.put("GET /v1/meshca/rotation", Permission.MESHCA_READ);
    EXPECTED.put("POST /v1/meshca/rotations", Permission.MESHCA_MANAGE);
    EXPECTED.put("POST /v1/meshca/rotations/{id}/advance", Permission.MESHCA_MANAGE);
    EXPECTED.put("POST /v1/meshca/rotations/{id}/rollback", Permission.MESHCA_MANAGE);
    EXPECTED.put("POST /v1/meshca/intermediates/requests", Permission.MESHCA_MANAGE);
    EXPECTED.put("POST /v1/meshca/intermediates", Permission.MESHCA_MANAGE);
    EXPECTED.put("POST /v1/meshca/hostname-certificates", Permission.HEARTBEAT);
    EXPECTED.put("POST /v1/nodes/{id}/certificate/reissue", Permission.NODES_OPERATE);
    // API.md §17: the panel serves the same routes for people (but the machines' own: the heartbeat, whoami)
    for (Map.Entry<String, Permission> e : EXPECTED.entrySet()) {
      if (e.getKey().endsWith("/heartbeat") || e.getKey().endsWith("/watch") || e.getKey().endsWith("/whoami")
          || e.getKey().endsWith("/hostname-certificates")) continue;
      PANEL.put(e.getKey().replace(" /v1/", " /api/v1/"), e.getValue());
    }
    PANEL.put("GET /api/v1/session", null);
    PANEL.put("DELETE /api/v1/session", null);
    PANEL.put("GET /api/v1/users", Permission.USERS_MANAGE);
    PANEL.put("POST /api/v1/users", Permission.USERS_MANAGE);
    PANEL.put("GET /api/v1/users/{id}", Permission.USERS_MANAGE);
    PANEL.put("PATCH /api/v1/users/{id}", Permission.USERS_MANAGE);
    PANEL.put("GET /api/v1/overview", Permission.NODES_READ);
    PANEL.put("GET /api/v1/overview/series", Permission.NODES_READ);
  }


  /** The node the matrix's agent token belongs to: its own heartbeat route is the one it may call. */
  static final String AGENT_NODE = "nd_01m8000000000000000000000a";
  static TestCluster cluster;
  static Meshplane app;
  static Http http;

  @BeforeAll
  static void start() {
    // the matrix sends a few dozen requests per session at once: above the default burst of 40
    cluster = TestCluster.started(1, Map.of("panel.api_burst", "1000", "panel.api_rate", "1000", "panel.login_per_address", "1000"));
    app = cluster.replica(0);
    http = cluster.http();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void theGrantsTableIsExactlySpecSections3And7() {
    Map<Surface, Set<String>> spec = new EnumMap<>(Surface.class);
    spec.put(Surface.ADMIN, Set.of("tokens:read", "tokens:write", "nodes:read", "nodes:enroll", "nodes:operate", "nodes:services",
        "acl:read", "acl:write", "ingress:read", "ingress:write", "waf:read", "waf:write", "audit:read", "events:read", "meshca:read", "meshca:revoke",
        "meshca:manage"));
    spec.put(Surface.OPERATOR, Set.of("nodes:read", "nodes:enroll", "nodes:operate", "nodes:services", "acl:read", "acl:write",
        "ingress:read", "ingress:write", "waf:read", "waf:write", "audit:read", "events:read", "meshca:read", "meshca:revoke"));
    spec.put(Surface.ENROLLMENT, Set.of("nodes:enroll"));
    spec.put(Surface.PIPELINE, Set.of("nodes:read", "nodes:services"));
    spec.put(Surface.MONITORING, Set.of("nodes:read", "acl:read", "ingress:read", "waf:read", "audit:read", "events:read", "meshca:read"));
    spec.put(Surface.AGENT, Set.of("heartbeat"));
    for (Surface s : Surface.values()) {
      assertEquals(new TreeSet<>(spec.get(s)), new TreeSet<>(Grants.of(s).permissionNames()), s.wire);
    }
    // API.md §17: admin = the admin surface + managing users; operator = the operator surface + tokens:read/write
    // for tokens whose surface is not admin; viewer = the monitoring surface
    Set<String> admin = new TreeSet<>(spec.get(Surface.ADMIN));
    admin.add("users:manage");
    assertEquals(admin, new TreeSet<>(Grants.of(Role.ADMIN).permissionNames()));
    Set<String> operator = new TreeSet<>(spec.get(Surface.OPERATOR));
    operator.addAll(Set.of("tokens:read", "tokens:write"));
    assertEquals(operator, new TreeSet<>(Grants.of(Role.OPERATOR).permissionNames()));
    assertEquals(new TreeSet<>(spec.get(Surface.MONITORING)), new TreeSet<>(Grants.of(Role.VIEWER).permissionNames()));
    // who may mint (and rotate, and revoke) which surfaces: admins all but agent; an operator user all but admin
    Set<Surface> creatable = EnumSet.complementOf(EnumSet.of(Surface.AGENT));
    assertEquals(creatable, Grants.of(Surface.ADMIN).mintable());
    assertEquals(creatable, Grants.of(Role.ADMIN).mintable());
    assertEquals(EnumSet.complementOf(EnumSet.of(Surface.AGENT, Surface.ADMIN)), Grants.of(Role.OPERATOR).mintable());
    for (Surface s : EnumSet.complementOf(EnumSet.of(Surface.ADMIN))) assertEquals(Set.of(), Grants.of(s).mintable(), s.wire);
    assertEquals(Set.of(), Grants.of(Role.VIEWER).mintable());
  }

  @Test
  void everyMountedRouteIsDeclaredAndEveryDeclaredRouteHasAMatrixRow() {
    Set<String> declared = new TreeSet<>();
    assertEquals(List.of("coordinator", "panel"), app.apis().stream().map(Api::name).toList(),
        "every API this replica serves is in the matrix");
    for (Api api : app.apis()) {
      Map<String, Permission> matrix = api.name().equals("panel") ? PANEL : EXPECTED;
      for (Api.Declared d : api.declared()) {
        String key = d.method().name() + " " + d.path();
        declared.add(key);
        if (PANEL_LOGIN.contains(key)) {
          assertTrue(d.open() && d.permission() == null, "the ways to sign in are the only routes without a credential");
          continue;
        }
        assertEquals(false, d.open(), key + " must take a credential");
        assertEquals(matrix.get(key), d.permission(), key);
      }
    }
    Set<String> rows = new TreeSet<>(EXPECTED.keySet());
    rows.addAll(PANEL.keySet());
    rows.addAll(PANEL_LOGIN);
    assertEquals(rows, declared, "every declared route has exactly one row in the matrix");
    assertEquals(List.of(), app.unguardedRoutes(), "nothing is mounted under /v1 without a guard");
    assertEquals(200, http.get(app.coordinatorPort(), Meshplane.OPENAPI_PATH).statusCode(), "but the public API description");
  }

  @Test
  void everyRouteRefusesARequestWithoutAToken() {
    for (String route : EXPECTED.keySet()) {
      Http.Head r = call(route, null);
      assertEquals(401, r.status(), route);
      assertEquals("unauthenticated", new JsonObject(r.body()).getString("code"), route);
    }
  }

  @Test
  void everyPanelRouteRefusesARequestWithoutASession() {
    for (String route : PANEL.keySet()) {
      HttpResponse<Buffer> r = callPanel(route, null);
      assertEquals(401, r.statusCode(), route);
      assertEquals("unauthenticated", r.bodyAsJsonObject().getString("code"), route);
    }
  }

  @Test
  void everyRoleIsAllowedOrForbiddenOnEveryPanelRouteExactlyAsTheSpecSays() {
    Map<Role, PanelSession> sessions = new EnumMap<>(Role.class);
    for (Role role : Role.values()) {
      PanelSession.user(app, "matrix-" + role.wire, role.wire, "team-a", "prod");
      sessions.put(role, PanelSession.signIn(http, app.panelPort(), "matrix-" + role.wire));
    }
    List<String> mismatches = new ArrayList<>();
    for (Map.Entry<String, Permission> row : PANEL.entrySet()) {
      if (row.getKey().equals("DELETE /api/v1/session")) continue; // would end the session the matrix uses; PanelApiTest covers it
      for (Role role : Role.values()) {
        boolean allowed = row.getValue() == null || Grants.of(role).grants(row.getValue());
        HttpResponse<Buffer> r = callPanel(row.getKey(), sessions.get(role));
        assertNotEquals(401, r.statusCode(), row.getKey() + " as " + role.wire + ": " + r.bodyAsString());
        assertNotEquals(500, r.statusCode(), row.getKey() + " as " + role.wire + ": " + r.bodyAsString());
        boolean forbidden = r.statusCode() == 403 && "forbidden".equals(r.bodyAsJsonObject().getString("code"));
        if (allowed == forbidden) mismatches.add(role.wire + " " + row.getKey() + " -> " + r.statusCode());
      }
    }
    assertEquals(List.of(), mismatches);
  }

  private HttpResponse<Buffer> callPanel(String route, PanelSession session) {
    String[] parts = route.split(" ", 2);
    String path = parts[1].startsWith("/api/v1/nodes/{id}")
        ? parts[1].replace("{id}", AGENT_NODE)
        : parts[1].replace("{id}", parts[1].startsWith("/api/v1/users") ? "usr_01m8000000000000000000000z" : "tok_01m8000000000000000000000z")
            .replace("{version}", "1").replace("{serial}", "0123456789abcdef0123456789abcdef");
    HttpMethod method = HttpMethod.valueOf(parts[0]);
    JsonObject body = method == HttpMethod.POST || method == HttpMethod.PATCH ? new JsonObject() : null;
    if (session == null) return http.send(method, app.panelPort(), path, null, body);
    return session.send(method, app.panelPort(), path, body);
  }

  @Test
  void everySurfaceIsAllowedOrForbiddenOnEveryRouteExactlyAsTheSpecSays() {
    Map<Surface, String> tokens = new EnumMap<>(Surface.class);
    for (Surface s : EnumSet.complementOf(EnumSet.of(Surface.AGENT))) {
      tokens.put(s, Tokens.issue(app, "team-a", "prod", s).jwt());
    }
    tokens.put(Surface.AGENT, Tokens.issue(app, "agent", new Scope("team-a", "prod", Surface.AGENT),
        AGENT_NODE, Instant.now().plus(Duration.ofDays(1))).jwt());
    List<String> mismatches = new ArrayList<>();
    for (Map.Entry<String, Permission> row : EXPECTED.entrySet()) {
      for (Surface s : Surface.values()) {
        boolean allowed = row.getValue() == null || Grants.of(s).grants(row.getValue());
        Http.Head r = call(row.getKey(), tokens.get(s));
        assertNotEquals(401, r.status(), row.getKey() + " as " + s.wire + ": " + r.body());
        boolean forbidden = r.status() == 403 && "forbidden".equals(new JsonObject(r.body()).getString("code"));
        if (allowed == forbidden) mismatches.add(s.wire + " " + row.getKey() + " -> " + r.status());
      }
    }
    assertEquals(List.of(), mismatches);
  }

  private Http.Head call(String route, String token) {
    String[] parts = route.split(" ", 2);
    String path = parts[1].startsWith("/v1/nodes/{id}")
        ? parts[1].replace("{id}", AGENT_NODE)
        : parts[1].replace("{id}", "tok_01m8000000000000000000000z").replace("{version}", "1")
            .replace("{serial}", "0123456789abcdef0123456789abcdef");
    HttpMethod method = HttpMethod.valueOf(parts[0]);
    JsonObject body = method == HttpMethod.POST ? new JsonObject() : null;
    // the watch's 200 is a stream that does not end: its status line is the answer
    if (path.endsWith("/watch")) return http.head(app.coordinatorPort(), path, token);
    HttpResponse<Buffer> r = http.send(method, app.coordinatorPort(), path, token, body);
    return new Http.Head(r.statusCode(), r.bodyAsString());
  }
}
