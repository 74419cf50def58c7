package io.meshplane.http;

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

  public static void send(RoutingContext ctx, ApiError error) {
    send(ctx, error.status(), error.code(), error.getMessage(), error.errorsJson());
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
  public static void send(HttpServerResponse response, String requestId, ApiError error) {
    send(response, requestId, error.status(), error.code(), error.getMessage(), error.errorsJson());
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
