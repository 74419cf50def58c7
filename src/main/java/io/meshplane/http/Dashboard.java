package io.meshplane.http;

import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import java.util.function.Supplier;

/**
 * The panel's browser side: the dashboard's static files (src/main/resources/webroot, no build step)
 * at {@code /}, and the headers every panel answer carries. The Content-Security-Policy allows only
 * the panel's own origin for scripts, styles, images and requests, no inline script or style, no
 * framing, no plugins: an injected string can never become code. API answers are never cached.
 */
public final class Dashboard {
  public static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
      + " font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

  /** Where the WebJars' files are served: {@code /vendor/uplot/1.6.30/dist/uPlot.esm.js}. */
  public static final String VENDOR = "/vendor/";

  /**
   * The OpenAPI document on the panel's port, for the API documentation page ({@code /api-docs.html}):
   * a file of the dashboard beside it, outside {@code /api/v1} (whose routes the document describes).
   */
  public static final String OPENAPI = "/openapi.yaml";

  private Dashboard() {}

  /**
   * What the panel serves while the replica starts: {@link Routers#starting} (probes, metrics, 503
   * under {@code apiPrefix}) with the dashboard's files and headers.
   */
  public static Handler<HttpServerRequest> starting(Vertx vertx, Observability observability, Readiness readiness,
      ClientAddresses clients, String apiPrefix, Buffer openApi, Supplier<String> why) {
    // Routers.starting builds a Router and declares it as the Handler a verticle serves
    Router router = (Router) Routers.starting(vertx, observability, readiness, clients, null, apiPrefix, why);
    mount(router, apiPrefix, openApi);
    return router;
  }

  /**
   * The panel's full router: {@code api} (from {@link Routers#api}, its routes mounted) with the dashboard
   * beside it, and {@code openApi} at {@link #OPENAPI}.
   */
  public static Routers.Mounted mount(Routers.Mounted api, String apiPrefix, Buffer openApi) {
    mount(api.router(), apiPrefix, openApi);
    return api;
  }

  /**
   * Puts the security headers in front of every route of {@code router} and serves the dashboard's
   * files for GET requests that no other route took ({@code apiPrefix} paths never reach the files).
   */
  static void mount(Router router, String apiPrefix, Buffer openApi) {
    router.route().order(-1).handler(ctx -> headers(ctx, apiPrefix));
    Routers.openApi(router, OPENAPI, openApi);
    StaticHandler files = StaticHandler.create("webroot")
        .setIndexPage("index.html")
        .setDirectoryListing(false)
        .setIncludeHidden(false)
        // the handler's own caching headers would be wrong here: no ETag, a Last-Modified that is the
        // time this replica unpacked the file from the jar (another replica, another date) and
        // "immutable"; the files are small (~200 KB in all), so a browser simply fetches them again
        .setCachingEnabled(false)
        .setDefaultContentEncoding("UTF-8");
    // the browser libraries the dashboard uses (uPlot, CodeMirror, jsdiff, Swagger UI), straight from their
    // WebJars on the classpath: /vendor/<library>/<version>/<file>. The version is in the path, so a
    // browser may keep them; an upgrade changes the path.
    StaticHandler vendor = StaticHandler.create("META-INF/resources/webjars")
        .setDirectoryListing(false)
        .setIncludeHidden(false)
        .setCachingEnabled(false)
        .setDefaultContentEncoding("UTF-8");
    router.route(VENDOR + "*").method(HttpMethod.GET).method(HttpMethod.HEAD).order(0).handler(ctx -> {
      ctx.response().headers().set("Cache-Control", "public, max-age=31536000, immutable");
      ctx.next();
    });
    router.route(VENDOR + "*").method(HttpMethod.GET).method(HttpMethod.HEAD).handler(vendor);
    router.routeWithRegex("^/(?!" + apiPrefix.substring(1).replace("/", "\\/") + "/).*").method(HttpMethod.GET).method(HttpMethod.HEAD)
        .handler(files);
  }

  private static void headers(RoutingContext ctx, String apiPrefix) {
    var h = ctx.response().headers();
    h.set("Content-Security-Policy", CSP);
    h.set("X-Content-Type-Options", "nosniff");
    h.set("X-Frame-Options", "DENY");
    h.set("Referrer-Policy", "no-referrer");
    h.set("Cross-Origin-Opener-Policy", "same-origin");
    h.set("Cross-Origin-Resource-Policy", "same-origin");
    // API answers are never stored; the dashboard's files are checked on every load (an upgrade shows at once)
    h.set("Cache-Control", ctx.request().path().startsWith(apiPrefix) ? "no-store" : "no-cache");
    ctx.next();
  }
}
