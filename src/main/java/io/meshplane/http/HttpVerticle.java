package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One instance of an HTTP component (coordinator or panel). Deployed once per event loop; all
 * instances share the listening socket. {@code start()} completes only when the server listens;
 * {@code stop()} drains in-flight requests for up to the grace period before closing.
 *
 * <p>In front of the router, on every request: the request target is checked ({@link RequestTarget}),
 * so a malformed path or query never reaches routing. Requests Netty cannot decode at all (request
 * line too long: 414, headers too large: 431, not HTTP: 400) get a problem+json answer and one log
 * line, then the connection is closed. The router can be replaced while the server runs
 * ({@link #install}): a replica serves its probes from the first second and its API once PostgreSQL
 * has answered.
 */
public final class HttpVerticle extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(HttpVerticle.class);
  /** Netty's default longest request line, which makes a longer URI a 414. */
  public static final int MAX_REQUEST_LINE = 4096;
  public static final int MAX_HEADERS = 16 * 1024;

  private final String host;
  /** HTTP/2 streams one connection may hold at once (watch streams and requests). */
  public static final int MAX_STREAMS_PER_CONNECTION = 1000;
  private final int port;
  private final Duration grace;
  private final Function<Vertx, Handler<HttpServerRequest>> routes;
  private final AtomicInteger boundPort;
  private volatile Handler<HttpServerRequest> router;
  private HttpServer server;

  public HttpVerticle(String host, int port, Duration grace, Function<Vertx, Handler<HttpServerRequest>> routes, AtomicInteger boundPort) {
    this.host = host;
    this.port = port;
    this.grace = grace;
    this.routes = routes;
    this.boundPort = boundPort;
  }

  @Override
  public Future<?> start() {
    HttpServerOptions options = new HttpServerOptions()
        .setHost(host)
        .setPort(port)
        .setIdleTimeout(120)
        .setIdleTimeoutUnit(TimeUnit.SECONDS)
        .setMaxInitialLineLength(MAX_REQUEST_LINE)
        .setMaxHeaderSize(MAX_HEADERS)
        .setDecompressionSupported(false)
        // HTTP/2: up to this many streams per connection (an L7 load balancer multiplexes many agents'
        // watch streams and heartbeats over few connections); Vert.x's default is 100
        .setInitialSettings(new io.vertx.core.http.Http2Settings().setMaxConcurrentStreams(MAX_STREAMS_PER_CONNECTION));
    router = routes.apply(vertx);
    server = vertx.createHttpServer(options)
        .requestHandler(this::handle)
        .invalidRequestHandler(HttpVerticle::invalid)
        .connectionHandler(c -> c.exceptionHandler(t -> LOG.debug("connection from {}: {}", c.remoteAddress(), t.toString())))
        .exceptionHandler(t -> LOG.debug("connection not established: {}", t.toString()));
    return server.listen().compose(s -> {
      int actual = s.actualPort();
      if (!boundPort.compareAndSet(0, actual) && boundPort.get() != actual) {
        return Future.failedFuture("instances of one component listen on different ports: " + boundPort.get() + " and " + actual);
      }
      return Future.succeededFuture();
    });
  }

  /** Replaces the router, built on this instance's event loop (its handlers may keep per-loop state). */
  public Future<Void> install(Function<Vertx, Handler<HttpServerRequest>> next) {
    Promise<Void> done = Promise.promise();
    context.runOnContext(v -> {
      try {
        router = next.apply(vertx);
        done.complete();
      } catch (RuntimeException e) {
        done.fail(e);
      }
    });
    return done.future();
  }

  private void handle(HttpServerRequest request) {
    Refusal bad = RequestTarget.check(request.path(), request.query());
    if (bad == null) {
      router.handle(request);
      return;
    }
    String id = RequestIds.choose(request.getHeader(RequestIds.HEADER));
    request.response().putHeader("Connection", "close");
    Problems.send(request.response(), id, bad);
  }

  /** A request Netty could not decode: answered as a problem, logged in one line, and the connection closed. */
  private static void invalid(HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    Refusal e;
    if (cause instanceof TooLongHttpLineException) {
      e = new Refusal(Refusal.Kind.URI_TOO_LONG, "uri_too_long", "the request line is longer than " + MAX_REQUEST_LINE + " bytes");
    } else if (cause instanceof TooLongHttpHeaderException) {
      e = new Refusal(Refusal.Kind.HEADERS_TOO_LARGE, "request_header_fields_too_large", "the request headers are larger than " + MAX_HEADERS / 1024 + " KiB");
    } else {
      e = Refusal.badRequest("the request is not valid HTTP/1.1");
    }
    String id = RequestIds.choose(null);
    LOG.info("[request: {}] malformed HTTP request from {} answered {}: {}", id, request.remoteAddress(), Problems.status(e.kind()),
        cause == null ? "unknown" : cause.getMessage());
    request.response().endHandler(v -> request.connection().close());
    request.response().putHeader("Connection", "close");
    Problems.send(request.response(), id, e);
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.shutdown(grace.toMillis(), TimeUnit.MILLISECONDS);
  }
}
