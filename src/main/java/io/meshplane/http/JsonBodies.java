package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.Locale;

/**
 * Checks every request body before any route logic, in two steps around the body reader:
 *
 * <ol>
 *   <li>{@link #mediaType} runs on the headers, before a byte of the body is read: a request that
 *       carries a body ({@code Content-Length} above 0, or {@code Transfer-Encoding}) must declare
 *       {@code application/json}, with no parameter other than {@code charset=utf-8}, and no content
 *       encoding; else 415. So a multipart or form body is never decoded at all (the body reader would
 *       otherwise parse it as a form and hand the route an empty body).
 *   <li>{@link #parse} reads a POST/PUT/PATCH body as strict JSON ({@link StrictJson}) that must be one
 *       object; else 400 naming the field. A body over {@value #PARSE_ON_LOOP_MAX} bytes is read on a
 *       worker: its cost grows with its size. The object is kept on the context, so handlers read it with
 *       {@link #object(RoutingContext)} and never parse twice.
 * </ol>
 */
public final class JsonBodies {
  private static final String KEY = "json_body";

  private JsonBodies() {}

  public static void mediaType(RoutingContext ctx) {
    MultiMap headers = ctx.request().headers();
    String length = headers.get(HttpHeaders.CONTENT_LENGTH);
    boolean hasBody = headers.contains(HttpHeaders.TRANSFER_ENCODING) || (length != null && !length.equals("0"));
    if (hasBody) {
      if (!isJson(headers.get(HttpHeaders.CONTENT_TYPE))) {
        ctx.fail(unsupported("request bodies must be sent as Content-Type: application/json"));
        return;
      }
      String encoding = headers.get(HttpHeaders.CONTENT_ENCODING);
      if (encoding != null && !encoding.equalsIgnoreCase("identity")) {
        ctx.fail(unsupported("request bodies must not be compressed (Content-Encoding)"));
        return;
      }
    }
    ctx.next();
  }

  public static void parse(RoutingContext ctx) {
    HttpMethod m = ctx.request().method();
    Buffer body = ctx.body().buffer();
    if ((m == HttpMethod.POST || m == HttpMethod.PUT || m == HttpMethod.PATCH) && body != null && body.length() > 0) {
      // a chunked body declares no length up front: its media type is checked here too
      if (!isJson(ctx.request().getHeader(HttpHeaders.CONTENT_TYPE))) {
        ctx.fail(unsupported("request bodies must be sent as Content-Type: application/json"));
        return;
      }
      if (body.length() <= PARSE_ON_LOOP_MAX) {
        ctx.put(KEY, StrictJson.parseObject(body.getBytes()));
      } else {
        // a large body (up to 64 KiB: a policy document) costs up to a millisecond to check and build:
        // on a worker, so that the heartbeats on this event loop do not wait behind it
        byte[] bytes = body.getBytes();
        ctx.vertx().executeBlocking(() -> StrictJson.parseObject(bytes), false).onComplete(ar -> {
          if (ar.failed()) {
            ctx.fail(ar.cause());
            return;
          }
          ctx.put(KEY, ar.result());
          ctx.next();
        });
        return;
      }
    }
    ctx.next();
  }

  /** Bodies up to this size (every heartbeat's) are parsed on the event loop; larger ones on a worker. */
  static final int PARSE_ON_LOOP_MAX = 8 * 1024;

  private static Refusal unsupported(String detail) {
    return new Refusal(Refusal.Kind.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", detail);
  }

  /** {@code application/json}, optionally with {@code charset=utf-8} (any case, quoted or not), and nothing else. */
  static boolean isJson(String contentType) {
    if (contentType == null) return false;
    String[] parts = contentType.split(";", -1);
    if (!parts[0].trim().toLowerCase(Locale.ROOT).equals("application/json")) return false;
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].trim().toLowerCase(Locale.ROOT);
      if (p.isEmpty() && i == parts.length - 1) continue; // a trailing ';'
      if (!p.equals("charset=utf-8") && !p.equals("charset=\"utf-8\"")) return false;
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
    if (o == null) throw Refusal.invalid(StrictJson.BODY, "is required: send a JSON object");
    return o;
  }
}
