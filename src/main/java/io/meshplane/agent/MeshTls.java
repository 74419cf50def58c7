package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.KeyCertOptions;
import io.vertx.core.net.TrustOptions;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's mesh TLS side ({@code --mesh-tls HOST:PORT}, off by default): a listener that requires
 * mutual TLS with the node's current MeshCA certificate and refuses a client whose certificate is
 * revoked, expired or does not chain to the bundle held ({@link PeerVerdict}), and the dialer behind
 * {@code GET /peers/{id}/tls} ({@link PeerDial}). It holds the latest {@link MeshIdentity}, published
 * by the agent's event loop whenever the node's certificate state changes, and read at each handshake.
 *
 * <p>The listener answers one route, {@code GET /identity}: the client's SPIFFE id as the server saw it
 * and its own. Each request judges the connection's client certificate again under the current state,
 * so a connection kept alive (or a session resumed) across a revocation is refused from then on.
 */
final class MeshTls {
  private static final Logger LOG = LoggerFactory.getLogger(MeshTls.class);

  private final Vertx vertx;
  private final AgentMetrics metrics;
  private final AtomicReference<MeshIdentity> identity = new AtomicReference<>(MeshIdentity.NONE);
  private HttpServer server;

  MeshTls(Vertx vertx, AgentMetrics metrics) {
    this.vertx = vertx;
    this.metrics = metrics;
  }

  /** Publishes the node's current certificate state (on the agent's event loop, after every change). */
  void publish(AgentPki pki) {
    identity.set(pki == null ? MeshIdentity.NONE : pki.identity());
  }

  MeshIdentity identity() {
    return identity.get();
  }

  Future<HttpServer> listen(String host, int port) {
    HttpServerOptions o = new HttpServerOptions().setSsl(true).setClientAuth(ClientAuth.REQUIRED).setSslHandshakeTimeout(10)
        .setKeyCertOptions(KeyCertOptions.wrap(MeshTlsManagers.keyManager(identity::get)))
        .setTrustOptions(TrustOptions.wrap(MeshTlsManagers.trustManager(identity::get, false, null, this::handshake)))
        .setIdleTimeout(30).setMaxInitialLineLength(1024).setMaxHeaderSize(8192);
    return vertx.createHttpServer(o).requestHandler(this::handle).listen(port, host).onSuccess(s -> server = s);
  }

  /** The listener's port, or -1 when it is off. */
  int port() {
    return server == null ? -1 : server.actualPort();
  }

  Future<Void> close() {
    return server == null ? Future.succeededFuture() : server.close();
  }

  /** Dials a peer's mesh TLS listener and judges its certificate (see {@link PeerDial}). */
  Future<JsonObject> dial(String nodeId, String host, int port) {
    return new PeerDial(vertx, identity::get).dial(nodeId, host, port).onSuccess(j -> metrics.meshTls("dialer", j.getString("verdict")));
  }

  private void handshake(PeerVerdict v) {
    metrics.meshTls("listener", v.verdict());
    if (!v.trusted()) LOG.debug("mesh TLS: refused a client ({}, {}): {}", v.spiffeId(), v.verdict(), v.reason());
  }

  private void handle(HttpServerRequest req) {
    req.response().putHeader("Cache-Control", "no-store");
    if (!req.path().equals("/identity")) {
      json(req, 404, new JsonObject().put("status", 404).put("title", "Not Found").put("detail", "no such path; try /identity"));
      return;
    }
    if (req.method() != HttpMethod.GET) {
      req.response().putHeader(HttpHeaders.ALLOW, "GET");
      json(req, 405, new JsonObject().put("status", 405).put("title", "Method Not Allowed").put("detail", "/identity answers GET only"));
      return;
    }
    MeshIdentity id = identity.get();
    PeerVerdict v = PeerVerdict.judge(id, peerChain(req), false, null, System.currentTimeMillis());
    if (!v.trusted()) {
      // the handshake's verdict no longer holds (a revocation or an expiry since): refuse and close the connection
      metrics.meshTls("listener", v.verdict());
      json(req, 403, new JsonObject().put("status", 403).put("title", "Forbidden").put("detail", v.verdict() + ": " + v.reason()));
      req.connection().close();
      return;
    }
    json(req, 200, new JsonObject().put("peer", v.toJson()).put("self", new JsonObject().put("spiffe_id", id.spiffeId()).put("serial", id.serial())));
  }

  private static X509Certificate[] peerChain(HttpServerRequest req) {
    try {
      List<Certificate> certs = req.connection().peerCertificates();
      X509Certificate[] out = new X509Certificate[certs.size()];
      for (int i = 0; i < out.length; i++) out[i] = (X509Certificate) certs.get(i);
      return out;
    } catch (SSLPeerUnverifiedException | ClassCastException e) {
      return new X509Certificate[0];
    }
  }

  private static void json(HttpServerRequest req, int status, JsonObject body) {
    req.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(body.encode());
  }
}
