package io.meshplane.http;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * One instance of an HTTP component (coordinator or panel). Deployed once per event loop; all
 * instances share the listening socket. {@code start()} completes only when the server listens;
 * {@code stop()} drains in-flight requests for up to the grace period before closing.
 */
public final class HttpVerticle extends VerticleBase {
  private final String host;
  private final int port;
  private final Duration grace;
  private final Function<io.vertx.core.Vertx, Router> routes;
  private final AtomicInteger boundPort;
  private HttpServer server;

  public HttpVerticle(String host, int port, Duration grace, Function<io.vertx.core.Vertx, Router> routes, AtomicInteger boundPort) {
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
        .setMaxHeaderSize(16 * 1024)
        .setDecompressionSupported(false);
    server = vertx.createHttpServer(options).requestHandler(routes.apply(vertx));
    return server.listen().compose(s -> {
      int actual = s.actualPort();
      if (!boundPort.compareAndSet(0, actual) && boundPort.get() != actual) {
        return Future.failedFuture("instances of one component listen on different ports: " + boundPort.get() + " and " + actual);
      }
      return Future.succeededFuture();
    });
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.shutdown(grace.toMillis(), TimeUnit.MILLISECONDS);
  }
}
