package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.streams.ReadStream;

/**
 * The first bytes of a request body, read before the WAF decides (at most {@code max}, plus the rest of
 * the chunk that crossed it): either the whole body ({@code ended}), or a prefix with the request
 * paused after it, then sent on as {@link #stream()}: the prefix followed by the rest, streamed, never
 * buffered. Event loop only.
 *
 * @param size the body's size as known: Content-Length, else the bytes read (the whole body when ended)
 */
record BodyPrefix(Buffer buffer, boolean ended, long size, HttpServerRequest request) {
  static Future<BodyPrefix> read(HttpServerRequest req, int max) {
    long declared = length(req.getHeader("content-length"));
    Promise<BodyPrefix> done = Promise.promise();
    // a client waiting for 100 Continue before its body: the edge asks for it itself (the WAF needs the first bytes)
    if ("100-continue".equalsIgnoreCase(req.getHeader("expect"))) req.response().writeContinue();
    Buffer acc = Buffer.buffer();
    req.exceptionHandler(done::tryFail);
    req.handler(b -> {
      acc.appendBuffer(b);
      if (acc.length() >= max && !done.future().isComplete()) {
        req.pause();
        done.tryComplete(new BodyPrefix(acc, false, declared >= 0 ? declared : acc.length(), req));
      }
    });
    req.endHandler(v -> done.tryComplete(new BodyPrefix(acc, true, acc.length(), req)));
    return done.future();
  }

  private static long length(String v) {
    if (v == null) return -1;
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The body as the proxy sends it on: the prefix, then what the request still brings. */
  ReadStream<Buffer> stream() {
    return new Prefixed(buffer, request);
  }

  /** A read stream that emits {@code prefix} first, then delegates to {@code rest} (paused until the first demand). */
  private static final class Prefixed implements ReadStream<Buffer> {
    private final Buffer prefix;
    private final HttpServerRequest rest;
    private Handler<Buffer> handler;
    private boolean sent;

    Prefixed(Buffer prefix, HttpServerRequest rest) {
      this.prefix = prefix;
      this.rest = rest;
    }

    @Override
    public ReadStream<Buffer> exceptionHandler(Handler<Throwable> h) {
      rest.exceptionHandler(h);
      return this;
    }

    @Override
    public ReadStream<Buffer> handler(Handler<Buffer> h) {
      handler = h;
      rest.handler(h);
      return this;
    }

    @Override
    public ReadStream<Buffer> pause() {
      rest.pause();
      return this;
    }

    @Override
    public ReadStream<Buffer> resume() {
      return fetch(Long.MAX_VALUE);
    }

    @Override
    public ReadStream<Buffer> fetch(long amount) {
      if (!sent && handler != null) {
        sent = true;
        handler.handle(prefix);
      }
      rest.fetch(amount);
      return this;
    }

    @Override
    public ReadStream<Buffer> endHandler(Handler<Void> h) {
      rest.endHandler(h);
      return this;
    }
  }
}
