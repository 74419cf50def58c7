package io.meshplane.panel;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Caller;
import io.meshplane.common.Fields;
import io.meshplane.common.Refusal;
import io.meshplane.common.Times;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.CookieSameSite;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Instant;
import java.util.Locale;

/**
 * {@code /session} (API.md §17): sign in, read the session, sign out. The login is the panel's one route
 * without a credential: it is rate-limited per source address and per username + address before the
 * password is even checked, answers the same 401 for an unknown user, a wrong password and a
 * disabled user (in the same time: see {@link Passwords}), and issues a new session id on every
 * success (a session id the browser had before is ended: no fixation).
 */
final class SessionRoutes {
  private SessionRoutes() {}

  static void mount(Api api, SessionService logins, UserService users, Sessions sessions, PanelSettings settings, String cookieName) {
    api.open(POST, "/session", "session.login", (ctx, none) -> login(ctx, logins, sessions, settings, cookieName));
    api.anyCaller(GET, "/session", "session.read", (ctx, caller) -> sessions.find(cookie(ctx, cookieName)).map(s -> {
      if (s == null) throw Refusal.unauthenticated("the session has ended or expired: sign in again");
      Responses.ok(ctx, body(s, sessions));
      return null;
    }));
    // on the record first: when the audit trail cannot be written (PostgreSQL away) the logout fails
    // whole (503) and the session stays as it was
    api.anyCaller(DELETE, "/session", "session.logout", (ctx, caller) -> users.loggedOut(caller, Api.request(ctx))
        .compose(v -> sessions.end(caller.credential()))
        .map(v -> {
          ctx.response().addCookie(cookie(cookieName, "", settings, 0));
          Responses.noContent(ctx);
          return null;
        }));
  }

  private static Future<Void> login(RoutingContext ctx, SessionService logins, Sessions sessions, PanelSettings settings,
      String cookieName) {
    JsonObject body = JsonBodies.required(ctx);
    Fields f = new Fields();
    String username = f.string(body, "username", "username");
    String password = f.string(body, "password", "password");
    if (username != null && (username.isEmpty() || username.length() > UserRoutes.MAX_USERNAME)) {
      f.error("username", "must be 1-" + UserRoutes.MAX_USERNAME + " characters");
    }
    if (password != null && (password.isEmpty() || password.codePointCount(0, password.length()) > UserRoutes.MAX_PASSWORD)) {
      f.error("password", "must be 1-" + UserRoutes.MAX_PASSWORD + " characters");
    }
    f.check();
    // a name no user can have (a NUL, a space, a letter outside ASCII, …) is refused before it reaches
    // PostgreSQL or a limiter key
    String name = UserRoutes.canonical(username);
    if (name == null) throw Refusal.invalid("username", "no user can have this name");
    return logins.login(name, password, Api.request(ctx), cookie(ctx, cookieName)).map(signedIn -> {
      ctx.response().addCookie(cookie(cookieName, signedIn.cookieValue(), settings, settings.sessionLifetime().toSeconds()));
      Responses.ok(ctx, body(signedIn.session(), sessions));
      return null;
    });
  }

  /** The session as its person sees it: who they are, what they may do, the CSRF token, when it ends. */
  private static JsonObject body(Session s, Sessions sessions) {
    Caller c = s.caller();
    return new JsonObject()
        .put("user", new JsonObject().put("id", s.userId()).put("username", s.username()).put("role", s.role().wire)
            .put("team", s.team()).put("environment", s.environment()).put("source", s.source()))
        .put("permissions", new JsonArray(c.permissionNames()))
        .put("csrf_token", s.csrf())
        .put("expires_at", Times.format(Instant.ofEpochMilli(s.expiresAtMs())))
        .put("idle_timeout_s", sessions.idle().toSeconds());
  }

  private static String cookie(RoutingContext ctx, String name) {
    Cookie c = ctx.request().getCookie(name);
    return c == null ? null : c.getValue();
  }

  /**
   * The session cookie with every flag set here (Vert.x's defaults are neither HttpOnly nor Secure):
   * HttpOnly, SameSite=Strict, Path=/, Secure unless {@code panel.cookie_secure=false}.
   */
  static Cookie cookie(String name, String value, PanelSettings settings, long maxAgeSeconds) {
    return Cookie.cookie(name, value).setPath("/").setHttpOnly(true).setSecure(settings.cookieSecure())
        .setSameSite(CookieSameSite.STRICT).setMaxAge(maxAgeSeconds);
  }
}
