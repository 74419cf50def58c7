package io.meshplane.panel;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.http.Api;
import io.meshplane.http.Query;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.CookieSameSite;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /session/oidc} (API.md §17, "Single sign-on"): what the login page shows, the start of a
 * login (a redirect to the IdP), and the IdP's callback (the panel's session cookie and a redirect to
 * the dashboard; any refusal is a redirect to {@code /#/login?error=<code>}, which the login page
 * explains). The three take no credential; the start and the callback count against the login's
 * rate limit per source address, and the start also against the cluster's bound on pending logins.
 *
 * <p>The binding cookie ties a login to the browser that started it: a state taken from someone
 * else's login is refused. It is {@code SameSite=Lax}, not Strict like the session's: the callback
 * is a top-level navigation coming from the IdP's site, which Strict cookies do not follow.
 */
final class OidcRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(OidcRoutes.class);
  static final String SECURE_BINDING = "__Host-meshplane_oidc";
  static final String PLAIN_BINDING = "meshplane_oidc";
  /**
   * What an IdP may put in the callback's query: code and state, an error, {@code iss} (RFC 9207:
   * checked against the issuer), {@code session_state} (OpenID Connect Session Management) and what
   * some IdPs add. Anything else is a redirect to the login page with {@code failed}.
   */
  static final Query CALLBACK = Query.of("code", "state", "error", "error_description", "error_uri", "iss", "session_state", "scope",
      "authuser", "prompt", "hd");

  private OidcRoutes() {}

  static void mount(Api api, OidcService oidc, PanelSettings settings, String sessionCookie) {
    String binding = settings.cookieSecure() ? SECURE_BINDING : PLAIN_BINDING;
    api.open(GET, "/session/oidc", "session.oidc_info", (ctx, none) -> {
      Responses.ok(ctx, oidc.info());
      return Future.succeededFuture();
    });
    // the start is a same-site navigation from the login page: it carries the Strict session cookie,
    // whose session the login ends when it succeeds (the callback, from the IdP's site, carries none)
    api.open(GET, "/session/oidc/start", "session.oidc_start", (ctx, none) -> oidc.start(Api.request(ctx), cookie(ctx, sessionCookie))
        .transform(ar -> {
      if (ar.succeeded()) {
        ctx.response().addCookie(bindingCookie(binding, ar.result().binding(), settings, OidcSettings.PENDING_TTL.toSeconds()));
        redirect(ctx, ar.result().authorizeUrl());
      } else {
        failed(ctx, ar.cause());
      }
      return Future.succeededFuture();
    }));
    api.open(GET, "/session/oidc/callback", "session.oidc_login", CALLBACK, (ctx, none) -> {
      String code = ctx.request().getParam("code");
      String state = ctx.request().getParam("state");
      String error = ctx.request().getParam("error");
      String iss = ctx.request().getParam("iss");
      return oidc.callback(code, state, error, iss, cookie(ctx, binding), Api.request(ctx)).transform(ar -> {
        // the binding cookie has served (or the login is over): gone either way
        ctx.response().addCookie(bindingCookie(binding, "", settings, 0));
        if (ar.succeeded()) {
          ctx.response().addCookie(SessionRoutes.cookie(sessionCookie, ar.result().cookieValue(), settings,
              settings.sessionLifetime().toSeconds()));
          redirect(ctx, "/#/");
        } else {
          failed(ctx, ar.cause());
        }
        return Future.succeededFuture();
      });
    }, ctx -> redirect(ctx, "/#/login?error=failed")); // a parameter no IdP sends: the login page, not a JSON problem
  }

  private static void failed(RoutingContext ctx, Throwable t) {
    String code = t instanceof OidcService.Failed f ? f.code : "failed";
    if (!(t instanceof OidcService.Failed)) LOG.warn("single sign-on: a login failed: {}", OidcService.summary(t));
    redirect(ctx, "/#/login?error=" + code);
  }

  private static void redirect(RoutingContext ctx, String location) {
    ctx.response().setStatusCode(302).putHeader(HttpHeaders.LOCATION, location).putHeader(HttpHeaders.CACHE_CONTROL, "no-store").end();
  }

  private static String cookie(RoutingContext ctx, String name) {
    Cookie c = ctx.request().getCookie(name);
    return c == null ? null : c.getValue();
  }

  private static Cookie bindingCookie(String name, String value, PanelSettings settings, long maxAgeSeconds) {
    return Cookie.cookie(name, value).setPath("/").setHttpOnly(true).setSecure(settings.cookieSecure()).setSameSite(CookieSameSite.LAX)
        .setMaxAge(maxAgeSeconds);
  }
}
