package io.meshplane.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * Checks every request body before any route logic: bodies must be JSON objects sent as
 * {@code application/json} (415 otherwise) and must parse (400). The parsed object is kept on the
 * context, so handlers read it with {@link #object(RoutingContext)} and never parse twice.
 */
public final class JsonBodies {
  private static final String KEY = "json_body";

  private JsonBodies() {}

  public static void handle(RoutingContext ctx) {
    HttpMethod m = ctx.request().method();
    Buffer body = ctx.body().buffer();
    if ((m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.PATCH) && body != null && body.length() > 0) {
      if (!isJson(ctx.request().getHeader("Content-Type"))) {
        ctx.fail(new ApiError(415, "unsupported_media_type", "request bodies must be sent as Content-Type: application/json"));
        return;
      }
      Object parsed;
      try {
        parsed = body.toJsonValue();
      } catch (DecodeException e) {
        ctx.fail(ApiError.badRequest("request body is not valid JSON"));
        return;
      }
      if (!(parsed instanceof JsonObject obj)) {
        ctx.fail(ApiError.badRequest("request body must be a JSON object"));
        return;
      }
      ctx.put(KEY, obj);
    }
    ctx.next();
  }

  static boolean isJson(String contentType) {
    if (contentType == null) return false;
    String[] parts = contentType.split(";");
    String type = parts[0].trim().toLowerCase(java.util.Locale.ROOT);
    if (!type.equals("application/json") && !(type.startsWith("application/") && type.endsWith("+json"))) return false;
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].trim().toLowerCase(java.util.Locale.ROOT);
      if (p.startsWith("charset=") && !p.equals("charset=utf-8") && !p.equals("charset=\"utf-8\"")) return false;
    }
    return true;
  }

  /** The request's JSON object; an empty object when the request had no body. */
  public static JsonObject object(RoutingContext ctx) {
    JsonObject o = ctx.get(KEY);
    return o == null ? new JsonObject() : o;
  }

  /** The request's JSON object; 400 when the request had no body at all. */
  public static JsonObject required(RoutingContext ctx) {
    JsonObject o = ctx.get(KEY);
    if (o == null) throw ApiError.badRequest("a JSON object body is required");
    return o;
  }
}
