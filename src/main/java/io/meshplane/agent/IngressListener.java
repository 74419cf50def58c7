package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The ingress listeners (plain {@code --ingress-listen} and, when given, TLS {@code --ingress-tls-listen})
 * and their connections, and the drain. From the drain's start every response says
 * {@code Connection: close} and its connection is closed once it is answered; a connection that arrives
 * is still taken and its request answered the same way (closing a connection the kernel has already
 * accepted resets the client, who has no reason to go elsewhere). The server sockets close (new
 * connections refused, which a balancer or a client takes as "go to the other") once every connection
 * that was open at the start has brought its last request and closed, or after the linger
 * ({@link #LINGER_MS} by default) at most (an idle keep-alive connection is given that long to bring a
 * request, answered rather than reset); the connections still idle then are closed with them. What
 * remains: a connection the kernel accepted in the instant the sockets close is reset (Vert.x cannot
 * close the listening socket alone: its shutdown also closes idle connections); a balancer that
 * honours {@code /readyz/ingress} sends none then (load-tests/RESULTS.md). The drain succeeds when no connection
 * is left, and fails at its grace deadline with the number still open (which are closed then).
 * {@link #undrain()} binds the same ports again. On the agent's event loop.
 */
final class IngressListener {
  /** How long at most a drain keeps the sockets bound so that idle keep-alive connections can bring a last request (answered, closing): the default. */
  static final long LINGER_MS = 1000;

  /** A finished drain: the evidence its result reports. */
  record Drained(String op, boolean ok, int openConnections, long requestsDuringDrain, long tookMs) {}

  private final Vertx vertx;
  private final String host;
  private final HttpServerOptions plainOptions;
  private final HttpServerOptions tlsOptions;
  private final Handler<HttpServerRequest> handler;
  private final Runnable drainFinished;
  private final long lingerMs;
  private int plainPort;
  private int tlsPort;
  private HttpServer plain;
  private HttpServer tls;
  /** Open connections → their requests in flight. */
  private final Map<HttpConnection, int[]> open = new IdentityHashMap<>();
  /** The connections that were open when the drain started and are still open: the sockets close when none is left. */
  private final Set<HttpConnection> openAtDrain = Collections.newSetFromMap(new IdentityHashMap<>());

  private boolean draining;
  private boolean unbound;
  private String drainOp;
  private long drainStartedMs;
  private long graceMs;
  private long requestsDuringDrain;
  private long lingerTimer = -1;
  private long deadlineTimer = -1;
  private Drained result;

  /**
   * @param tlsOptions null: no TLS listener
   * @param lingerMs how long at most a drain keeps the sockets bound ({@link #LINGER_MS} by default)
   * @param drainFinished told when a drain finishes (the agent beats at once to report it)
   */
  IngressListener(Vertx vertx, String host, int plainPort, HttpServerOptions plainOptions, int tlsPort, HttpServerOptions tlsOptions,
      long lingerMs, Handler<HttpServerRequest> handler, Runnable drainFinished) {
    this.lingerMs = lingerMs;
    this.vertx = vertx;
    this.host = host;
    this.plainPort = plainPort;
    this.plainOptions = plainOptions;
    this.tlsPort = tlsPort;
    this.tlsOptions = tlsOptions;
    this.handler = handler;
    this.drainFinished = drainFinished;
  }

  /** Binds the listeners; a port 0 becomes the port bound, kept for an undrain. */
  Future<Void> listen() {
    Future<HttpServer> p = server(plainOptions).listen(plainPort, host).onSuccess(s -> {
      plain = s;
      plainPort = s.actualPort();
    });
    if (tlsOptions == null) return p.mapEmpty();
    return p.compose(x -> server(tlsOptions).listen(tlsPort, host)).onSuccess(s -> {
      tls = s;
      tlsPort = s.actualPort();
    }).mapEmpty();
  }

  private HttpServer server(HttpServerOptions o) {
    return vertx.createHttpServer(o).connectionHandler(this::connected).requestHandler(this::request);
  }

  private void connected(HttpConnection c) {
    // taken even while draining: the kernel has accepted it, so closing it now would reset the client
    // (its request is answered with Connection: close; the sockets close within the linger)
    open.put(c, new int[1]);
    c.closeHandler(v -> {
      open.remove(c);
      if (!draining || result != null) return;
      if (openAtDrain.remove(c) && openAtDrain.isEmpty() && !unbound) {
        unbind(graceMs);
      } else {
        finishIfEmpty();
      }
    });
  }

  private void request(HttpServerRequest req) {
    HttpConnection c = req.connection();
    int[] inFlight = open.get(c);
    if (inFlight == null) {
      req.connection().close();
      return;
    }
    inFlight[0]++;
    HttpServerResponse resp = req.response();
    resp.headersEndHandler(v -> {
      if (draining) resp.putHeader(HttpHeaders.CONNECTION, "close");
    });
    resp.endHandler(v -> {
      inFlight[0]--;
      if (draining) {
        requestsDuringDrain++;
        if (inFlight[0] <= 0) c.shutdown(30, TimeUnit.SECONDS);
      }
    });
    handler.handle(req);
  }

  /**
   * Starts the drain of {@code op} (at most {@code graceMs}), or reports the one under way.
   *
   * @return null while the drain is under way; its outcome once finished (until an undrain)
   */
  Drained drain(String op, long graceMs) {
    // one drain at a time: a command that comes while one is under way waits for its outcome (the listener is one)
    if (draining) return result;
    draining = true;
    unbound = false;
    result = null;
    drainOp = op;
    drainStartedMs = System.currentTimeMillis();
    requestsDuringDrain = 0;
    this.graceMs = graceMs;
    openAtDrain.clear();
    openAtDrain.addAll(open.keySet());
    // nothing open to bring a last request: the sockets close at once (on the next turn of the loop, so
    // the outcome is never reported from inside this call)
    long linger = openAtDrain.isEmpty() ? 1 : Math.max(1, Math.min(lingerMs, graceMs / 2));
    lingerTimer = vertx.setTimer(linger, id -> {
      lingerTimer = -1;
      unbind(graceMs);
    });
    deadlineTimer = vertx.setTimer(Math.max(1, graceMs), id -> {
      deadlineTimer = -1;
      finish();
    });
    return null;
  }

  private void unbind(long graceMs) {
    if (!draining || result != null || unbound) return;
    if (lingerTimer >= 0) vertx.cancelTimer(lingerTimer);
    lingerTimer = -1;
    unbound = true;
    // the server sockets close now (no new connection); connections with a request in flight close once it is answered
    long left = Math.max(1000, graceMs + 1000);
    if (plain != null) plain.shutdown(left, TimeUnit.MILLISECONDS);
    if (tls != null) tls.shutdown(left, TimeUnit.MILLISECONDS);
    open.forEach((c, n) -> {
      if (n[0] == 0) c.shutdown(30, TimeUnit.SECONDS);
    });
    finishIfEmpty();
  }

  private void finishIfEmpty() {
    if (unbound && open.isEmpty()) finish();
  }

  private void finish() {
    if (result != null || !draining) return;
    if (lingerTimer >= 0) vertx.cancelTimer(lingerTimer);
    if (deadlineTimer >= 0) vertx.cancelTimer(deadlineTimer);
    lingerTimer = -1;
    deadlineTimer = -1;
    int left = open.size();
    result = new Drained(drainOp, left == 0, left, requestsDuringDrain, System.currentTimeMillis() - drainStartedMs);
    if (left > 0) {
      // the grace is over: what is still open is closed (the drain failed and says how many)
      for (HttpConnection c : List.copyOf(open.keySet())) c.close();
      open.clear();
      if (plain != null) plain.close();
      if (tls != null) tls.close();
    }
    plain = null;
    tls = null;
    drainFinished.run();
  }

  /** Ends a drain (finished or not): the listeners bind their ports again. */
  Future<Void> undrain() {
    if (!draining) return Future.succeededFuture();
    if (result == null) {
      // a drain under way is given up: its connections may finish, the sockets open again
      if (lingerTimer >= 0) vertx.cancelTimer(lingerTimer);
      if (deadlineTimer >= 0) vertx.cancelTimer(deadlineTimer);
      lingerTimer = -1;
      deadlineTimer = -1;
      if (plain != null) plain.close();
      if (tls != null) tls.close();
      plain = null;
      tls = null;
    }
    draining = false;
    result = null;
    drainOp = null;
    openAtDrain.clear();
    return listen();
  }

  boolean draining() {
    return draining;
  }

  /** The finished drain, or null (none, or one under way). */
  Drained result() {
    return result;
  }

  int openConnections() {
    return open.size();
  }

  long drainStartedMs() {
    return drainStartedMs;
  }

  int plainPort() {
    return plainPort;
  }

  /** -1: no TLS listener. */
  int tlsPort() {
    return tlsOptions == null ? -1 : tlsPort;
  }

  Future<Void> close() {
    Future<Void> a = plain == null ? Future.succeededFuture() : plain.close();
    Future<Void> b = tls == null ? Future.succeededFuture() : tls.close();
    return Future.join(a, b).mapEmpty();
  }
}
