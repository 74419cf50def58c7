package io.meshplane.testing;

import io.meshplane.app.Meshplane;
import io.meshplane.audit.AuditLog;
import io.meshplane.panel.UserService;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;

/**
 * A person in the panel, for tests: signs in through {@code POST /api/v1/session} on a replica's panel
 * port, then sends the session cookie (and the CSRF token on mutating requests) as a browser would.
 * The cookie can be replayed against another replica's port: the session store is the cluster's.
 */
public final class PanelSession {
  public static final String PASSWORD = "correct horse battery staple";

  private final Http http;
  private final String cookie;
  private final String csrf;
  private final JsonObject body;

  private PanelSession(Http http, String cookie, String csrf, JsonObject body) {
    this.http = http;
    this.cookie = cookie;
    this.csrf = csrf;
    this.body = body;
  }

  /** Creates a user straight in the database (as {@code meshplane user create} does) with {@link #PASSWORD}; returns it. */
  public static JsonObject user(Meshplane app, String username, String role, String team, String environment) {
    return UserService.createFromCli(app.pool(), new AuditLog(app.pool()), new JsonObject().put("username", username)
        .put("password", PASSWORD).put("role", role).put("team", team).put("environment", environment), "test");
  }

  /** The raw login answer. */
  public static HttpResponse<Buffer> login(Http http, int port, String username, String password) {
    return http.send(HttpMethod.POST, port, "/api/v1/session", null, new JsonObject().put("username", username).put("password", password));
  }

  /** Signs in; fails the test unless the login answers 200. */
  public static PanelSession signIn(Http http, int port, String username) {
    HttpResponse<Buffer> r = login(http, port, username, PASSWORD);
    if (r.statusCode() != 200) throw new AssertionError("login of " + username + ": " + r.statusCode() + " " + r.bodyAsString());
    String setCookie = r.getHeader("Set-Cookie");
    String cookie = setCookie.substring(0, setCookie.indexOf(';'));
    JsonObject body = r.bodyAsJsonObject();
    return new PanelSession(http, cookie, body.getString("csrf_token"), body);
  }

  public JsonObject body() {
    return body;
  }

  /** {@code name=value} of the session cookie. */
  public String cookie() {
    return cookie;
  }

  public String csrf() {
    return csrf;
  }

  /** Sends with the cookie and, on mutating methods, the CSRF token. */
  public HttpResponse<Buffer> send(HttpMethod method, int port, String path, JsonObject json) {
    return send(method, port, path, json, method == HttpMethod.GET || method == HttpMethod.HEAD ? null : csrf);
  }

  /** Sends with the cookie and this CSRF header (none when null). */
  public HttpResponse<Buffer> send(HttpMethod method, int port, String path, JsonObject json, String csrfHeader) {
    HttpRequest<Buffer> r = http.request(method, port, path).putHeader("Cookie", cookie);
    if (csrfHeader != null) r.putHeader("X-CSRF-Token", csrfHeader);
    return json == null ? http.send(r) : Http.await(r.sendJsonObject(json), 20);
  }

  public HttpResponse<Buffer> get(int port, String path) {
    return send(HttpMethod.GET, port, path, null);
  }
}
