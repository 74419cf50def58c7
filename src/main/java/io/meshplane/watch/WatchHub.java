package io.meshplane.watch;

import io.meshplane.access.Caller;
import io.meshplane.common.Refusal;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This replica's open streams (one owner: every stream is registered and unregistered here): by id, by
 * node and by token; opening one (admission, the node's limit, the response's headers) and ending it
 * for a reason. What streams are sent is {@link WatchDispatch}'s.
 */
final class WatchHub {
  private final Vertx vertx;
  private final StreamClaims claims;
  private final Admission admission;
  private final WatchMetrics metrics;
  private final WatchModule.Settings settings;
  final ConcurrentHashMap<Long, WatchStream> all = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, WatchStream[]> byNode = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, WatchStream[]> byToken = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  /** Told of every stream that opens: its first answer is due. */
  private final java.util.function.Consumer<WatchStream> opened;
  private volatile boolean draining;

  WatchHub(Vertx vertx, StreamClaims claims, WatchMetrics metrics, WatchModule.Settings settings,
      java.util.function.Consumer<WatchStream> opened) {
    this.vertx = vertx;
    this.claims = claims;
    this.admission = new Admission(settings.admitPerSecond());
    this.metrics = metrics;
    this.settings = settings;
    this.opened = opened;
  }

  int size() {
    return all.size();
  }

  /**
   * Opens node {@code nodeId}'s stream on {@code request} (on its event loop): refused with a problem
   * while the replica drains (503), beyond the admission rate (503 with Retry-After) or beyond the
   * node's streams (409); otherwise the response is started and the stream registered, its first
   * answer due.
   */
  Future<Void> open(HttpServerRequest request, Caller caller, String nodeId, long knownPeers, long knownAcl, WatchStream.Pki pki,
      String ingress) {
    if (draining) {
      metrics.refused("draining");
      return Future.failedFuture(Refusal.unavailable("unavailable", "this replica is shutting down: open the stream on another replica", 1));
    }
    if (!admission.take()) {
      metrics.refused("rate");
      return Future.failedFuture(Refusal.unavailable("unavailable", "this replica admits " + settings.admitPerSecond()
          + " new streams per second; retry after the Retry-After header's seconds", admission.retryAfterSeconds()));
    }
    WatchStream[] held = byNode.get(nodeId);
    if (held != null && held.length >= settings.maxPerNode()) return tooMany();
    long id = ids.incrementAndGet();
    String claim = claims.id(id);
    Context context = vertx.getOrCreateContext();
    return claims.claim(context, nodeId, claim, settings.maxPerNode())
        .recover(t -> Future.failedFuture(Refusal.unavailable("unavailable", "the cluster did not answer; retry", 1)))
        .compose(won -> {
          if (!won) return tooMany();
          HttpServerResponse response = request.response();
          if (response.closed()) {
            claims.release(nodeId, claim);
            return Future.succeededFuture();
          }
          response.setStatusCode(200)
              .putHeader("Content-Type", "application/x-ndjson")
              .putHeader("Cache-Control", "no-store")
              .putHeader("X-Accel-Buffering", "no");
          if (request.version() != HttpVersion.HTTP_2) response.setChunked(true);
          response.setWriteQueueMaxSize(settings.maxBufferBytes());
          WatchStream s = new WatchStream(id, nodeId, caller.credential(), caller.expiresAtMillis(), claim, context, request,
              knownPeers, knownAcl);
          if (pki != null) {
            s.pki = true;
            s.pkiBundle = pki.bundle();
            s.pkiRevocations = pki.revocations();
          }
          s.ingress = ingress;
          register(s);
          metrics.opened.increment();
          response.closeHandler(v -> gone(s));
          response.exceptionHandler(t -> gone(s));
          opened.accept(s);
          return Future.succeededFuture();
        });
  }

  private Future<Void> tooMany() {
    metrics.refused("too_many_streams");
    return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "too_many_streams",
        "this node already holds " + settings.maxPerNode() + " watch streams; close one first"));
  }

  private void register(WatchStream s) {
    all.put(s.id, s);
    byNode.compute(s.nodeId, (k, v) -> add(v, s));
    if (s.tokenId != null) byToken.compute(s.tokenId, (k, v) -> add(v, s));
  }

  private void unregister(WatchStream s) {
    if (all.remove(s.id) == null) return;
    byNode.computeIfPresent(s.nodeId, (k, v) -> remove(v, s));
    if (s.tokenId != null) byToken.computeIfPresent(s.tokenId, (k, v) -> remove(v, s));
    claims.release(s.nodeId, s.claim);
  }

  private static WatchStream[] add(WatchStream[] v, WatchStream s) {
    if (v == null) return new WatchStream[] {s};
    WatchStream[] out = Arrays.copyOf(v, v.length + 1);
    out[v.length] = s;
    return out;
  }

  private static WatchStream[] remove(WatchStream[] v, WatchStream s) {
    List<WatchStream> out = new ArrayList<>(Arrays.asList(v));
    out.remove(s);
    return out.isEmpty() ? null : out.toArray(new WatchStream[0]);
  }

  WatchStream[] ofNode(String nodeId) {
    return byNode.get(nodeId);
  }

  /** The agent went away (or the connection broke): unregistered, counted once. On the event loop. */
  private void gone(WatchStream s) {
    if (s.ended) {
      unregister(s);
      return;
    }
    s.end("client_gone", 0);
    unregister(s);
    metrics.closed("client_gone");
  }

  /** Ends a stream for {@code reason} (from any thread: the work goes to its event loop). */
  void close(WatchStream s, String reason) {
    s.context.runOnContext(v -> {
      if (s.ended) return;
      s.end(reason, "draining".equals(reason) || "slow_reader".equals(reason) ? 1 : 0);
      unregister(s);
      metrics.closed(reason);
    });
  }

  /** Ends the streams of a node (deleted). */
  void closeNode(String nodeId, String reason) {
    WatchStream[] v = byNode.get(nodeId);
    if (v != null) for (WatchStream s : v) close(s, reason);
  }

  /** A token was denied: revoked now ({@code notAfter == Long.MIN_VALUE}), or retired from {@code notAfter}. From any thread. */
  void credentialDenied(String tokenId, long notAfter) {
    WatchStream[] v = byToken.get(tokenId);
    if (v == null) return;
    for (WatchStream s : v) {
      if (notAfter == Long.MIN_VALUE || notAfter <= System.currentTimeMillis()) close(s, "token_revoked");
      else s.notAfterMillis = Math.min(s.notAfterMillis, notAfter);
    }
  }

  /** Ends streams whose token expired or whose retirement began (the dispatch thread calls it every second). */
  void sweep(long now) {
    for (WatchStream s : all.values()) {
      if (s.ended) continue;
      if (now >= s.expiresAtMillis) close(s, "token_expired");
      else if (now >= s.notAfterMillis) close(s, "token_revoked");
    }
  }

  /**
   * Stops admitting streams and ends the open ones with reason {@code draining}, spread over the
   * drain window (never slower than the survivors admit them: at least admit_per_second a second),
   * so that a rolling restart moves agents a few at a time. Completes when every stream has ended.
   */
  Future<Void> drain() {
    draining = true;
    Promise<Void> done = Promise.promise();
    List<WatchStream> left = new ArrayList<>(all.values());
    if (left.isEmpty()) return Future.succeededFuture();
    double perSecond = Math.max(settings.admitPerSecond(), left.size() / Math.max(1.0, settings.drain().toMillis() / 1000.0));
    int perTick = (int) Math.max(1, Math.ceil(perSecond / 10));
    long[] timer = new long[1];
    timer[0] = vertx.setPeriodic(1, 100, id -> {
      for (int i = 0; i < perTick && !left.isEmpty(); i++) close(left.remove(left.size() - 1), "draining");
      if (left.isEmpty()) {
        vertx.cancelTimer(timer[0]);
        // the close lines are written on the streams' loops: done once they have all run
        vertx.setTimer(200, t -> done.tryComplete());
      }
    });
    return done.future();
  }
}
