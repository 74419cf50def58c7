package io.meshplane.http;

import static io.meshplane.http.HostileInput.*;
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
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one replica {@link HostileInputTest} sends its cases to, what the routes act on (made through the
 * API), the lists of routes that take input, and the check of one case: a clear 4xx that changes nothing.
 */
final class HostileReplica {
  private HostileReplica() {}

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

  /** A PKCS#10 CSR in PEM for a new P-256 key. */
  static String csrPem() throws Exception {
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    java.security.KeyPair key = g.generateKeyPair();
    byte[] der = new org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder(new javax.security.auth.x500.X500Principal("CN=hostile"),
        key.getPublic()).build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA").build(key.getPrivate())).getEncoded();
    return "-----BEGIN CERTIFICATE REQUEST-----\n" + java.util.Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END CERTIFICATE REQUEST-----\n";
  }

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

    // MeshCA: two certificates of the node (a list of two pages), one of them the revocation's target
    String serial = certificate(node.id());
    certificate(node.id());
    String certsCursor = http.get(port, "/v1/meshca/certificates?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(certsCursor);
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/certificates/{serial}/revoke", "/v1/meshca/certificates/" + serial
        + "/revoke", "", bearer, new JsonObject().put("reason", "superseded"), List.of(new Field("reason", Kind.STRING, true, true))));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/meshca/certificates", "/v1/meshca/certificates", bearer, Map.of("limit", "1",
        "node", node.id(), "expiring_within", "48h", "state", "valid", "order", "latest", "cursor", certsCursor), "meshca-certificates", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/meshca/crl", "/v1/meshca/crl", bearer, Map.of("format", "pem"), null, null));
    // a staged rotation and five intermediate requests: what the valid bodies below would start is refused (409), so nothing changes
    String rotation = http.send(HttpMethod.POST, port, "/v1/meshca/rotations", admin, new JsonObject().put("kind", "intermediate"))
        .bodyAsJsonObject().getString("id");
    assertNotNull(rotation);
    for (int i = 0; i < 5; i++) expect(201, http.send(HttpMethod.POST, port, "/v1/meshca/intermediates/requests", admin, new JsonObject()));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/rotations", "/v1/meshca/rotations", "", bearer,
        new JsonObject().put("kind", "root"), List.of(new Field("kind", Kind.STRING, true, true))));
    for (String step : List.of("advance", "rollback")) {
      // the rotation is staged: a step from another phase is 409
      BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/rotations/{id}/" + step, "/v1/meshca/rotations/" + rotation + "/" + step, "",
          bearer, new JsonObject().put("phase", "issuing"), List.of(new Field("phase", Kind.STRING, true, true))));
      idRoute(HttpMethod.POST, "/v1/meshca/rotations/{id}/" + step, "id", "/v1/meshca/rotations/{hostile}/" + step, bearer,
          Set.of(400, 404, 405));
    }
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/intermediates/requests", "/v1/meshca/intermediates/requests", "", bearer,
        new JsonObject().put("note", "hostile"), List.of(Field.ignored("note"))));
    // a certificate whose key no request made: 400 naming certificate
    String someCertificate = http.get(port, "/v1/meshca/bundle", admin).bodyAsString();
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/intermediates", "/v1/meshca/intermediates", "", bearer,
        new JsonObject().put("certificate", someCertificate).put("root", someCertificate),
        // PEM is lines: a newline is what it is made of, not a control character to refuse (a broken PEM is refused all the same)
        List.of(new Field("certificate", Kind.STRING, true, false), new Field("root", Kind.STRING, true, false))));
    // the node reports no certificate in its heartbeats: a reissue is 409
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/{id}/certificate/reissue", nodePath + "/certificate/reissue", "", bearer,
        new JsonObject().put("note", "hostile"), List.of(Field.ignored("note"))));

    // ingress routes: a second node (tag:test, ssh:22 bound; the policy lets tag:test reach it on tcp/22) and two routes to it
    Nodes.Enrolled target = Nodes.enroll(http, port, admin, "hostile-ingress-target", "web", "prod");
    expect(200, http.send(HttpMethod.PUT, port, "/v1/nodes/" + target.id() + "/services", admin,
        new JsonObject().put("services", new JsonArray().add("ssh:22"))));
    JsonObject route = new JsonObject().put("team", "web").put("environment", "prod").put("hostname", "hostile.example.net")
        .put("path_prefix", "/").put("target", new JsonObject().put("node", target.id()).put("service", "ssh")).put("exposure", "public")
        .put("tls", "acme").put("ingress_tag", "tag:test");
    String routeId = http.send(HttpMethod.POST, port, "/v1/ingress/routes", admin, route).bodyAsJsonObject().getString("id");
    assertNotNull(routeId);
    expect(201, http.send(HttpMethod.POST, port, "/v1/ingress/routes", admin, route.copy().put("path_prefix", "/api")));
    String routesCursor = http.get(port, "/v1/ingress/routes?limit=1", admin).bodyAsJsonObject().getString("next_cursor");
    assertNotNull(routesCursor);
    List<Field> routeFields = List.of(new Field("team", Kind.STRING, false, true), new Field("environment", Kind.STRING, false, true),
        new Field("position", Kind.NUMBER, false, false), new Field("hostname", Kind.STRING, true, true),
        new Field("path_prefix", Kind.STRING, false, true), new Field("target", Kind.OBJECT, true, false),
        new Field("target.node", Kind.STRING, true, true), new Field("target.service", Kind.STRING, true, true),
        new Field("exposure", Kind.STRING, true, true), new Field("tls", Kind.STRING, true, true),
        new Field("ingress_tag", Kind.STRING, true, true));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/ingress/routes", "/v1/ingress/routes", "", bearer,
        route.copy().put("hostname", "other.example.net").put("position", 1), routeFields));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.PUT, "/v1/ingress/routes/{id}", "/v1/ingress/routes/" + routeId, "", bearer,
        route.copy().put("position", 2), routeFields));
    // a tls=meshca route the node (tag:test) serves: the hostname certificate request's valid body names it
    expect(201, http.send(HttpMethod.POST, port, "/v1/ingress/routes", admin, route.copy().put("hostname", "meshca.example.net")
        .put("exposure", "mesh").put("tls", "meshca")));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/meshca/hostname-certificates", "/v1/meshca/hostname-certificates", "", agent,
        new JsonObject().put("csr", csrPem()).put("hostnames", new JsonArray().add("meshca.example.net")),
        // PEM is lines: a newline is what it is made of (a broken PEM is refused all the same, naming csr)
        List.of(new Field("csr", Kind.STRING, true, false), new Field("hostnames", Kind.ARRAY, true, false),
            new Field("hostnames[0]", Kind.STRING, true, true))));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/ingress/routes", "/v1/ingress/routes", bearer, Map.of("limit", "1", "team", "web",
        "environment", "prod", "hostname", "hostile.example.net", "cursor", routesCursor), "ingress-routes", null));
    idRoute(HttpMethod.GET, "/v1/ingress/routes/{id}", "id", "/v1/ingress/routes/{hostile}", bearer, Set.of(400, 404, 405));
    idRoute(HttpMethod.PUT, "/v1/ingress/routes/{id}", "id", "/v1/ingress/routes/{hostile}", bearer, Set.of(400, 404, 405));
    idRoute(HttpMethod.DELETE, "/v1/ingress/routes/{id}", "id", "/v1/ingress/routes/{hostile}", bearer, Set.of(400, 404, 405));

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
            .put("status", "succeeded").put("detail", "done")))
        .put("ingress_routes", new JsonObject().put("version", "1").put("waf", new JsonObject().put("version", "1").put("samples", new JsonArray())));
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
            new Field("known.peers", Kind.NUMBER, false, false), new Field("known.acl", Kind.NUMBER, false, false),
            new Field("ingress_routes", Kind.OBJECT, false, false), new Field("ingress_routes.version", Kind.STRING, true, true),
            new Field("ingress_routes.waf", Kind.OBJECT, false, false), new Field("ingress_routes.waf.version", Kind.STRING, false, true))));
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
    List<Field> impactFields = new ArrayList<>(List.of(Field.pointer("policy", Kind.OBJECT, true, false)));
    for (Field f : policyFields) impactFields.add(Field.pointer("policy." + f.path(), f.kind(), f.refusesNull(), f.refusesControl()));
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/acl/impact", "/v1/acl/impact", scope, bearer, new JsonObject().put("policy", policy),
        impactFields));
    // a dry run: the hostile variants are refused before anything, the valid one changes nothing either
    BODY_ROUTES.add(new BodyRoute(HttpMethod.POST, "/v1/nodes/bulk", "/v1/nodes/bulk", "", bearer,
        new JsonObject().put("action", "retag").put("ids", new JsonArray().add(node.id())).put("tags", new JsonArray().add("tag:test"))
            .put("dry_run", true),
        List.of(new Field("action", Kind.STRING, true, true), new Field("ids", Kind.ARRAY, false, false),
            new Field("tags", Kind.ARRAY, false, false), new Field("dry_run", Kind.BOOLEAN, false, false))));
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
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/nodes", "/v1/nodes", bearer, Map.ofEntries(Map.entry("limit", "5"),
        Map.entry("status", "online"), Map.entry("tag", "tag:test"), Map.entry("name_prefix", "host"), Map.entry("agent_version", "1.4.0"),
        Map.entry("team", "web"), Map.entry("environment", "prod"), Map.entry("address", "100.64.0.0/10"), Map.entry("sort", "-name"),
        Map.entry("policy_sync", "current"), Map.entry("cursor", "")), "nodes", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/events", "/v1/events", bearer, Map.of("limit", "5", "type", "node.stale",
        "node_id", node.id(), "since", since, "order", "newest", "node_name", "hostile", "cursor", ""), "events", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/audit", "/v1/audit", bearer, Map.of("limit", "5", "action", "token.create",
        "actor_id", "tok_1", "actor_name", "root", "since", since, "cursor", ""), "audit", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/api/v1/overview/series", "/api/v1/overview/series", panel, Map.of("window", "24h"),
        null, null));
    Map<String, String> scopeParams = Map.of("team", "web", "environment", "prod");
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl", "/v1/acl", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.PUT, "/v1/acl", "/v1/acl", bearer, scopeParams, null, policy));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl/versions", "/v1/acl/versions", bearer,
        Map.of("team", "web", "environment", "prod", "limit", "1", "cursor", aclCursor), "acl-versions:web/prod", null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/acl/versions/{version}", "/v1/acl/versions/1", bearer, scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/acl/versions/{version}/restore", "/v1/acl/versions/1/restore", bearer,
        scopeParams, null, null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/acl/preview", "/v1/acl/preview", bearer, scopeParams, null, preview(policy)));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.POST, "/v1/acl/impact", "/v1/acl/impact", bearer, scopeParams, null,
        new JsonObject().put("policy", policy)));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/nodes/{id}/operations", nodePath + "/operations", bearer,
        Map.of("status", "pending", "limit", "1", "cursor", opsCursor), "operations:" + node.id(), null));
    QUERY_ROUTES.add(new QueryRoute(HttpMethod.GET, "/v1/operations", "/v1/operations", bearer, Map.of("limit", "5", "kind", "rekey,move_relay",
        "status", "open,failed", "node_id", node.id(), "since", since, "until", "2126-01-01T00:00:00Z", "cursor", ""), "operations", null));
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
    idRoute(HttpMethod.GET, "/v1/nodes/{id}/watch", "id", "/v1/nodes/{hostile}/watch", agent, Set.of(400, 403, 404));
    idRoute(HttpMethod.PUT, "/v1/nodes/{id}/services", "id", "/v1/nodes/{hostile}/services", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress", "id", "/v1/nodes/{hostile}/ingress", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress/{name}/drain", "id", "/v1/nodes/{hostile}/ingress/web/drain", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/ingress/{name}/drain", "name", nodePath + "/ingress/{hostile}/drain", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/rekey", "id", "/v1/nodes/{hostile}/rekey", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/nodes/{id}/certificate/reissue", "id", "/v1/nodes/{hostile}/certificate/reissue", bearer, notFound);
    idRoute(HttpMethod.PUT, "/v1/nodes/{id}/relay", "id", "/v1/nodes/{hostile}/relay", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/nodes/{id}/operations", "id", "/v1/nodes/{hostile}/operations", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/operations/{id}", "id", "/v1/operations/{hostile}", bearer, notFound);
    idRoute(HttpMethod.GET, "/v1/acl/versions/{version}", "version", "/v1/acl/versions/{hostile}?" + scope, bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/acl/versions/{version}/restore", "version", "/v1/acl/versions/{hostile}/restore?" + scope, bearer,
        notFound);
    HostileWafRoutes.add(http, port, admin, scope, bearer);
    idRoute(HttpMethod.GET, "/v1/meshca/certificates/{serial}", "serial", "/v1/meshca/certificates/{hostile}", bearer, notFound);
    idRoute(HttpMethod.POST, "/v1/meshca/certificates/{serial}/revoke", "serial", "/v1/meshca/certificates/{hostile}/revoke", bearer,
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

  /** Issues a MeshCA certificate for the node from a real CSR (as its agent will); its serial. */
  static String certificate(String nodeId) throws Exception {
    java.security.KeyPairGenerator g = java.security.KeyPairGenerator.getInstance("EC");
    g.initialize(new java.security.spec.ECGenParameterSpec("secp256r1"));
    java.security.KeyPair pair = g.generateKeyPair();
    byte[] der = new org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder(new org.bouncycastle.asn1.x500.X500Name("CN=x"),
        pair.getPublic()).build(new org.bouncycastle.operator.jcajce.JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate()))
        .getEncoded();
    io.meshplane.meshca.MeshcaModule.NodeIdentity id = new io.meshplane.meshca.MeshcaModule.NodeIdentity(nodeId, "web", "prod",
        "100.64.0.9", Nodes.key());
    io.meshplane.meshca.MeshcaModule.Issuance out = app.meshca().issue(new io.meshplane.audit.Actor("node", nodeId, "hostile-target"),
        io.meshplane.common.RequestInfo.NONE, id, java.util.Base64.getEncoder().encodeToString(der)).toCompletionStage().toCompletableFuture()
        .get(30, java.util.concurrent.TimeUnit.SECONDS);
    return ((io.meshplane.meshca.MeshcaModule.Issuance.Issued) out).serial();
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

  static void stop() throws Exception {
    try {
      if (sql != null) sql.close();
    } finally {
      if (cluster != null) cluster.close();
      if (logs != null) logs.close();
    }
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
   * the panel's users, the ingress routes, the traffic policies, and the node's live entry. One round trip on one connection.
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
        + "password_hash, role, team, environment, disabled, updated_at, last_login_at), '|' ORDER BY id), '')) FROM users)"
        + " || '; ingress ' || (SELECT md5(coalesce(string_agg(concat_ws(',', id, team, environment, position, hostname, path_prefix, "
        + "target_node, target_service, exposure, tls, ingress_tag, updated_at), '|' ORDER BY id), '')) FROM ingress_routes)"
        + " || ' ' || (SELECT coalesce(string_agg(team || '/' || environment || ' v' || version, ', '), 'none') FROM ingress_versions)"
        + " || '; waf ' || (SELECT md5(coalesce(string_agg(concat_ws(',', team, environment, version, document, mode, restored_from), '|' "
        + "ORDER BY team, environment, version), '')) FROM waf_policies)";
    StringBuilder sb = new StringBuilder();
    try (Statement st = sql.createStatement(); ResultSet rs = st.executeQuery(query)) {
      rs.next();
      sb.append(rs.getString(1));
    }
    LiveNode live = app.heartbeat().live().map().get(node.id());
    sb.append("; live ").append(live == null ? "none" : live.heartbeatAt() + String.join(",", live.endpoints()) + live.telemetry());
    return sb.toString();
  }

  static String what(HttpMethod method, String target) {
    return method + " " + target.replace(node.id(), "{node}").replace(tokenId, "{token}").replace(userId, "{user}");
  }
}
