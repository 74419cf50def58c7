package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.json.DecodeException;
import io.vertx.core.net.impl.VertxConnection;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.HttpException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where failures become responses: route failures, unmatched routes (404), wrong
 * methods (405), body limits (413). Expected failures are answered without a log line per request;
 * an unexpected one is a 500 {@code internal} whose stack trace goes to the log with the request id
 * and never to the client.
 */
final class FailureHandler implements Handler<RoutingContext> {
  private static final Logger LOG = LoggerFactory.getLogger(FailureHandler.class);

  @Override
  public void handle(RoutingContext ctx) {
    Throwable failure = ctx.failure();
    if (failure instanceof Refusal e) {
      Problems.send(ctx, e);
      return;
    }
    if (failure instanceof HttpException he) {
      byStatus(ctx, he.getStatusCode());
      return;
    }
    if (failure instanceof DecodeException) {
      Problems.send(ctx, Refusal.invalid(StrictJson.BODY, "is not valid JSON"));
      return;
    }
    if (ctx.response().closed() || failure instanceof HttpClosedException) {
      LOG.debug("[request: {}] the client closed the connection", RequestIds.of(ctx));
      return;
    }
    if (failure != null && isFraming(failure)) {
      // Netty could not decode the body (a bad chunk size, say): nothing more can be read from this connection
      LOG.info("[request: {}] malformed HTTP body framing from {}: {}", RequestIds.of(ctx), ctx.request().remoteAddress(),
          failure.getMessage());
      ctx.response().putHeader("Connection", "close");
      Problems.send(ctx, Refusal.badRequest("the request body's HTTP framing is malformed"));
      // Vert.x closes the connection right after this handler returns, and holds writes made while it
      // reads until the read completes: without a flush now the answer would be dropped with the socket.
      if (ctx.request().connection() instanceof VertxConnection connection) connection.flush();
      return;
    }
    if (failure != null && DatabaseFailures.isStatementTimeout(failure)) {
      // a list or count that reads too much of the data: cancelled by PostgreSQL at postgres.read_timeout
      LOG.info("[request: {}] {} {}: the query ran past postgres.read_timeout and was cancelled", RequestIds.of(ctx),
          ctx.request().method(), ctx.request().path());
      Problems.send(ctx, Refusal.unavailable("query_timeout", "the query ran longer than this replica allows (postgres.read_timeout) and "
          + "was cancelled: narrow it (a tag, a name prefix, a time range) or retry later", 5));
      return;
    }
    if (failure != null && DatabaseFailures.isTransientConflict(failure)) {
      // rolled back by PostgreSQL to break a lock conflict with another transaction: nothing changed
      LOG.warn("[request: {}] {} {}: PostgreSQL rolled the transaction back to resolve a conflict ({}); the client may retry",
          RequestIds.of(ctx), ctx.request().method(), ctx.request().path(), failure.getMessage());
      Problems.send(ctx, Refusal.unavailable("unavailable", "the change conflicted with another one and was rolled back; retry", 1));
      return;
    }
    if (failure != null && DatabaseFailures.isUnavailable(failure)) {
      LOG.warn("[request: {}] database unavailable: {}", RequestIds.of(ctx), failure.toString());
      Problems.send(ctx, Refusal.unavailable("the database is unavailable; retry later"));
      return;
    }
    int status = ctx.statusCode();
    if (status >= 400 && status < 500) {
      // refused by Vert.x Web itself (a missing Host header, say): a client error, not a failure of ours
      LOG.debug("[request: {}] refused by the router with {}: {}", RequestIds.of(ctx), status, failure == null ? "" : failure.getMessage());
      byStatus(ctx, status);
      return;
    }
    if (failure != null) {
      LOG.error("[request: {}] {} {} failed", RequestIds.of(ctx), ctx.request().method(), ctx.request().path(), failure);
      Problems.send(ctx, 500, "internal", "an unexpected error occurred; quote the request id when reporting it", null);
      return;
    }
    byStatus(ctx, status);
  }

  /** An exception raised by Netty's HTTP decoder while the body was read. */
  private static boolean isFraming(Throwable t) {
    if (t instanceof DecoderException || t instanceof TooLongFrameException) return true;
    StackTraceElement[] stack = t.getStackTrace();
    return stack.length > 0 && stack[0].getClassName().startsWith("io.netty.handler.codec.");
  }

  private static void byStatus(RoutingContext ctx, int status) {
    switch (status) {
      case 400 -> Problems.send(ctx, Refusal.badRequest("the request is malformed"));
      case 414 -> Problems.send(ctx, 414, "uri_too_long", "the request URI is too long", null);
      case 431 -> Problems.send(ctx, 431, "request_header_fields_too_large", "the request headers are too large", null);
      case 401 -> Problems.send(ctx, Refusal.unauthenticated("a valid bearer token is required"));
      case 403 -> Problems.send(ctx, Refusal.forbidden("not permitted"));
      case 404 -> Problems.send(ctx, Refusal.notFound("no such resource: " + ctx.request().path()));
      case 405 -> Problems.send(ctx, 405, "method_not_allowed",
          ctx.request().method() + " is not allowed on " + ctx.request().path(), null);
      case 413 -> Problems.send(ctx, 413, "payload_too_large", "the request body is larger than 64 KiB", null);
      case 415 -> Problems.send(ctx, 415, "unsupported_media_type", "request bodies must be sent as Content-Type: application/json", null);
      case 503 -> Problems.send(ctx, Refusal.unavailable("a dependency is unavailable; retry later"));
      default -> {
        if (status >= 400 && status < 500) {
          Problems.send(ctx, status, "invalid_request", "the request cannot be served", null);
        } else {
          LOG.error("[request: {}] {} {} failed with status {}", RequestIds.of(ctx), ctx.request().method(), ctx.request().path(), status);
          Problems.send(ctx, 500, "internal", "an unexpected error occurred; quote the request id when reporting it", null);
        }
      }
    }
  }
}
