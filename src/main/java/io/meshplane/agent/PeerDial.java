package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.KeyCertOptions;
import io.vertx.core.net.TrustOptions;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * One dial of a peer's mesh TLS listener with the node's certificate, for {@code GET /peers/{id}/tls}:
 * its own client (a fresh TLS session, never a resumed one), the server's chain judged by
 * {@link PeerVerdict} exactly as the listener judges a client's, then {@code GET /identity} to learn
 * how the peer saw this node. The answer: the verdict on the peer ({@code trusted}, {@code revoked},
 * {@code untrusted}, {@code expired}, or {@code unreachable} when no certificate could be judged) with
 * the reason and what the peer's certificate says; and, when the peer was trusted, {@code peer_saw}
 * (this node's SPIFFE id as the peer's listener saw it) or {@code refused_by_peer} (why the peer would
 * not take this node's certificate).
 */
final class PeerDial {
  static final int CONNECT_TIMEOUT_MS = 5_000;
  static final int ANSWER_TIMEOUT_MS = 10_000;

  private final Vertx vertx;
  private final Supplier<MeshIdentity> identity;

  PeerDial(Vertx vertx, Supplier<MeshIdentity> identity) {
    this.vertx = vertx;
    this.identity = identity;
  }

  Future<JsonObject> dial(String nodeId, String host, int port) {
    AtomicReference<PeerVerdict> seen = new AtomicReference<>();
    HttpClientOptions o = new HttpClientOptions().setSsl(true).setVerifyHost(false).setConnectTimeout(CONNECT_TIMEOUT_MS).setKeepAlive(false)
        .setKeyCertOptions(KeyCertOptions.wrap(MeshTlsManagers.keyManager(identity)))
        .setTrustOptions(TrustOptions.wrap(MeshTlsManagers.trustManager(identity, true, nodeId, seen::set)));
    HttpClientAgent client = vertx.createHttpClient(o);
    RequestOptions r = new RequestOptions().setMethod(HttpMethod.GET).setHost(host).setPort(port).setURI("/identity").setTimeout(ANSWER_TIMEOUT_MS);
    MeshIdentity self = identity.get();
    return client.request(r)
        .compose(req -> req.send())
        .compose(resp -> resp.body().map(b -> {
          JsonObject body = parse(b.toString());
          if (resp.statusCode() == 200 && body.getValue("peer") instanceof JsonObject p) return new JsonObject().put("peer_saw", p.getValue("spiffe_id"));
          return new JsonObject().put("refused_by_peer", resp.statusCode() + " " + (body.getValue("detail") instanceof String d ? d : "(no detail)"));
        }))
        .transform(ar -> {
          PeerVerdict v = seen.get();
          if (v == null) v = PeerVerdict.unreachable(reason(ar.cause()));
          JsonObject out = new JsonObject().put("node_id", nodeId).put("target", target(host, port)).mergeIn(v.toJson()).put("self", self.spiffeId());
          if (ar.succeeded()) out.mergeIn(ar.result());
          else if (v.trusted()) out.put("refused_by_peer", reason(ar.cause()));
          return client.close().transform(x -> Future.succeededFuture(out));
        });
  }

  private static JsonObject parse(String s) {
    try {
      return new JsonObject(s);
    } catch (RuntimeException e) {
      return new JsonObject();
    }
  }

  private static String reason(Throwable t) {
    if (t == null) return "no answer";
    Throwable c = t;
    // the innermost message says most (a handshake alert, "Connection refused")
    while (c.getCause() != null && c.getCause() != c) c = c.getCause();
    String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    String top = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    return top.contains(m) ? top : top + " (" + m + ")";
  }

  static String target(String host, int port) {
    return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
  }
}
