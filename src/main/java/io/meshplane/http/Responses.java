package io.meshplane.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** JSON success responses. */
public final class Responses {
  private Responses() {}

  public static void json(RoutingContext ctx, int status, JsonObject body) {
    ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(body.toBuffer());
  }

  public static void ok(RoutingContext ctx, JsonObject body) {
    json(ctx, 200, body);
  }

  /** 200 with a JSON body already encoded (off the event loop, where its size grows with the data). */
  public static void ok(RoutingContext ctx, Buffer encoded) {
    ctx.response().setStatusCode(200).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(encoded);
  }

  public static void noContent(RoutingContext ctx) {
    ctx.response().setStatusCode(204).end();
  }
}
