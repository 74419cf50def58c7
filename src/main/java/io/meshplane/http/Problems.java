package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** Writes RFC 9457 problem details, the only error body either API ever sends. */
public final class Problems {
  public static final String MEDIA_TYPE = "application/problem+json";

  private Problems() {}

  public static void send(RoutingContext ctx, Refusal error) {
    if (error.retryAfterSeconds() > 0 && !ctx.response().headWritten()) {
      ctx.response().putHeader("Retry-After", Integer.toString(error.retryAfterSeconds()));
    }
    send(ctx, status(error.kind()), error.code(), error.getMessage(), errors(error));
  }

  /** The one place a refusal's kind becomes an HTTP status (API.md §1's table). */
  public static int status(Refusal.Kind kind) {
    return switch (kind) {
      case INVALID -> 400;
      case UNAUTHENTICATED -> 401;
      case FORBIDDEN -> 403;
      case NOT_FOUND -> 404;
      case CONFLICT -> 409;
      case TOO_LARGE -> 413;
      case URI_TOO_LONG -> 414;
      case UNSUPPORTED_MEDIA_TYPE -> 415;
      case RATE_LIMITED -> 429;
      case HEADERS_TOO_LARGE -> 431;
      case UNAVAILABLE -> 503;
    };
  }

  private static JsonArray errors(Refusal error) {
    JsonArray a = new JsonArray();
    for (Refusal.FieldError e : error.errors()) a.add(new JsonObject().put("field", e.field()).put("message", e.message()));
    return a;
  }

  public static void send(RoutingContext ctx, int status, String code, String detail, JsonArray errors) {
    var response = ctx.response();
    if (response.ended() || response.closed()) return;
    if (response.headWritten()) {
      // Too late for a clean answer: cut the connection rather than send a half response.
      ctx.request().connection().close();
      return;
    }
    send(response, RequestIds.of(ctx), status, code, detail, errors);
  }

  /** For answers given outside the router (a malformed request line or target, see {@code HttpVerticle}). */
  public static void send(HttpServerResponse response, String requestId, Refusal error) {
    send(response, requestId, status(error.kind()), error.code(), error.getMessage(), errors(error));
  }

  private static void send(HttpServerResponse response, String requestId, int status, String code, String detail, JsonArray errors) {
    JsonObject body = new JsonObject()
        .put("type", "urn:meshplane:problem:" + code)
        .put("title", HttpResponseStatus.valueOf(status).reasonPhrase())
        .put("status", status)
        .put("detail", detail)
        .put("code", code)
        .put("request_id", requestId)
        .put("errors", errors == null ? new JsonArray() : errors);
    response.setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, MEDIA_TYPE);
    if (response.headers().get(RequestIds.HEADER) == null) response.putHeader(RequestIds.HEADER, requestId);
    if (status == 401) {
      response.putHeader("WWW-Authenticate",
          "unauthenticated".equals(code) ? "Bearer" : "Bearer error=\"invalid_token\"");
    }
    response.end(body.toBuffer());
  }
}
