package io.meshplane.http;

import io.meshplane.access.Authenticator;
import io.meshplane.access.Denials;
import io.meshplane.common.Refusal;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.micrometer.PrometheusScrapingHandler;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The plumbing every HTTP component shares (API.md §1, §15): request ids, the 64 KiB body limit, the
 * JSON body check, the probes and metrics, and the one failure handler for everything that goes wrong,
 * including unknown routes (404) and wrong methods (405). Features add their routes to the result.
 */
public final class Routers {
  public static final int BODY_LIMIT = 64 * 1024;
  private static final JsonObject UP = new JsonObject().put("status", "UP");

  private Routers() {}

  /** The OpenAPI document of {@code /v1} (a resource of the jar), read once at start. */
  public static Buffer openApiDocument() {
    try (InputStream in = Routers.class.getResourceAsStream("/openapi.yaml")) {
      if (in == null) throw new IllegalStateException("openapi.yaml is missing from the jar");
      return Buffer.buffer(in.readAllBytes());
    } catch (IOException e) {
      throw new IllegalStateException("openapi.yaml cannot be read: " + e.getMessage(), e);
    }
  }

  /** Serves the OpenAPI document at {@code path}, without authentication (it describes the API, it holds no data). */
  static void openApi(Router router, String path, Buffer document) {
    router.get(path).handler(ctx -> {
      Query.NONE.check(ctx);
      ctx.response().putHeader("Content-Type", "application/yaml").end(document);
    });
  }

  /** A router, the API mounted on it, and the routes under its prefix that the API did not mount. */
  public record Mounted(Router router, Api api, Supplier<List<String>> unguarded) {
    public Handler<HttpServerRequest> handler() {
      return router;
    }
  }

  /**
   * An API on a fresh base router, with {@code mount} adding the features' routes: what a component
   * serves once it is started. {@code <prefix>/openapi.yaml} serves {@code openApi} without a token
   * (none when {@code openApi} is null).
   */
  public static Mounted api(Vertx vertx, Observability observability, Readiness readiness, ClientAddresses clients, Buffer openApi,
      String name, String prefix, boolean machines, Authenticator authenticator, Denials denials, Consumer<Api> mount) {
    Router router = base(vertx, observability, readiness, clients);
    String openApiPath = prefix + "/openapi.yaml";
    if (openApi != null) openApi(router, openApiPath, openApi);
    Api api = new Api(router, name, prefix, machines, authenticator, denials);
    mount.accept(api);
    return new Mounted(router, api, () -> {
      List<String> out = new ArrayList<>();
      for (Route r : router.getRoutes()) {
        String path = r.getPath() != null ? r.getPath() : r.getName();
        if (path == null || !path.startsWith(prefix) || (openApi != null && path.equals(openApiPath)) || api.mounted(r)) continue;
        out.add((r.methods() == null ? "*" : r.methods().toString()) + " " + path);
      }
      return out;
    });
  }

  /**
   * What a component serves while the replica starts: probes, metrics, the API's description, and 503
   * {@code unavailable} with {@code Retry-After: 5} for every other path under {@code prefix}.
   */
  public static Handler<HttpServerRequest> starting(Vertx vertx, Observability observability, Readiness readiness,
      ClientAddresses clients, Buffer openApi, String prefix, Supplier<String> why) {
    Router router = base(vertx, observability, readiness, clients);
    if (openApi != null) openApi(router, prefix + "/openapi.yaml", openApi);
    router.route(prefix + "/*").handler(ctx -> {
      ctx.response().putHeader("Retry-After", "5");
      ctx.fail(Refusal.unavailable("this replica is starting (" + why.get() + "); retry"));
    });
    return router;
  }

  public static Router base(Vertx vertx, Observability observability, Readiness readiness, ClientAddresses clients) {
    Router router = Router.router(vertx);
    router.route().handler(RequestIds::handle);
    // with no trusted proxy the TCP peer is the client: no handler on every request (the heartbeat's path)
    if (clients.any()) router.route().handler(clients::handle);
    router.route().handler(JsonBodies::mediaType);
    router.route().handler(BodyHandler.create(false).setBodyLimit(BODY_LIMIT));
    router.route().handler(JsonBodies::parse);

    probe(router, "/healthz").handler(ctx -> Responses.ok(ctx, UP));
    probe(router, "/readyz").handler(ctx -> {
      Set<String> exclude;
      try {
        exclude = excluded(ctx.request().getParam("exclude"), readiness.names());
      } catch (Refusal r) {
        ctx.fail(r);
        return;
      }
      readiness.check(exclude).onComplete(ar -> {
        if (ar.failed()) {
          ctx.fail(ar.cause());
          return;
        }
        JsonObject result = ar.result();
        Responses.json(ctx, "UP".equals(result.getString("status")) ? 200 : 503, result);
      });
    });
    probe(router, "/metrics").handler(PrometheusScrapingHandler.create(observability.registry()));

    FailureHandler failures = new FailureHandler();
    router.route().failureHandler(failures);
    for (int status : new int[] {400, 401, 403, 404, 405, 406, 413, 414, 415, 431, 500, 501, 503}) {
      router.errorHandler(status, failures);
    }
    return router;
  }

  /**
   * A probe answers {@code HEAD} like {@code GET} (same status and headers, no body: the HTTP server
   * drops the body of an answer to HEAD), for load balancers and uptime checkers that probe with HEAD.
   */
  private static Route probe(Router router, String path) {
    return router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD);
  }

  /** {@code exclude=a,b}: names of registered checks, else 400 naming the parameter. */
  static Set<String> excluded(String raw, Set<String> known) {
    if (raw == null) return Set.of();
    Set<String> out = new java.util.TreeSet<>();
    for (String name : raw.split(",", -1)) {
      if (!known.contains(name)) {
        throw Refusal.invalid("exclude", "must name readiness checks separated by commas, from " + new java.util.TreeSet<>(known));
      }
      out.add(name);
    }
    return out;
  }
}
