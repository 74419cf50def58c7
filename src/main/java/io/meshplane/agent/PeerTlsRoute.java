package io.meshplane.agent;

import io.meshplane.common.Ids;
import io.meshplane.common.Ports;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * {@code GET /peers/{node id}/tls[?target=HOST:PORT]} on the agent's own listener: dials the peer's
 * mesh TLS listener with this node's certificate and answers the verdict on the peer's ({@link PeerDial}).
 * Without {@code target} the peer's mesh address from the peers held, at this agent's own
 * {@code --mesh-tls} port (a fleet uses one port). A bad node id or target is a 400 naming the field.
 * Callers on loopback only (403 otherwise), even when {@code --listen} is opened to a scraper.
 */
final class PeerTlsRoute {
  /** A DNS name or an IPv4 address. */
  private static final java.util.regex.Pattern HOST = java.util.regex.Pattern.compile("^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$");
  /** An IPv6 address (written in brackets in {@code target}). */
  private static final java.util.regex.Pattern IPV6 = java.util.regex.Pattern.compile("^[0-9A-Fa-f:.]{2,45}$");

  private PeerTlsRoute() {}

  /** Whether {@code path} is this route's ({@code /peers/<x>/tls}). */
  static boolean matches(String path) {
    return path.startsWith("/peers/") && path.endsWith("/tls") && path.length() > "/peers//tls".length();
  }

  static void handle(HttpServerRequest req, AgentVerticle agent) {
    if (!loopback(req)) {
      // a listener opened off loopback for a scraper must not let its callers make the node dial anywhere with its certificate
      json(req, 403, problem(403, "Forbidden", "/peers/{id}/tls answers callers on this host (loopback) only"));
      return;
    }
    String path = req.path();
    String nodeId = path.substring("/peers/".length(), path.length() - "/tls".length());
    if (!Ids.looksLike("nd", nodeId)) {
      bad(req, "id", "must be a node id (nd_…)");
      return;
    }
    MeshTls tls = agent.meshTls();
    String host;
    int port;
    String target = req.getParam("target");
    if (target != null) {
      int colon = target.lastIndexOf(':');
      host = colon <= 0 ? "" : target.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
      port = colon <= 0 ? -1 : Ports.parseOrZero(target.substring(colon + 1));
      if (host.isEmpty() || host.length() > 253 || port <= 0 || !(HOST.matcher(host).matches() || IPV6.matcher(host).matches())) {
        bad(req, "target", "must be HOST:PORT (a DNS name, an IPv4 address or [an IPv6 address]) with a port 1-65535");
        return;
      }
    } else {
      String address = agent.session().peerAddress(nodeId);
      if (address == null) {
        json(req, 404, problem(404, "Not Found", "node " + nodeId + " is not among this node's peers; give target=HOST:PORT to dial it anyway"));
        return;
      }
      port = agent.meshTlsConfiguredPort();
      if (port <= 0) {
        bad(req, "target", "needed: this agent runs without a fixed --mesh-tls port, so the peer's port is not known");
        return;
      }
      host = address;
    }
    tls.dial(nodeId, host, port).onComplete(ar -> {
      if (ar.succeeded()) json(req, 200, ar.result());
      else json(req, 500, problem(500, "Internal Server Error", String.valueOf(ar.cause())));
    });
  }

  private static boolean loopback(HttpServerRequest req) {
    try {
      return req.remoteAddress() != null && java.net.InetAddress.getByName(req.remoteAddress().hostAddress()).isLoopbackAddress();
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  private static void bad(HttpServerRequest req, String field, String message) {
    json(req, 400, problem(400, "Bad Request", field + ": " + message)
        .put("errors", new JsonArray().add(new JsonObject().put("field", field).put("message", message))));
  }

  private static JsonObject problem(int status, String title, String detail) {
    return new JsonObject().put("status", status).put("title", title).put("detail", detail);
  }

  private static void json(HttpServerRequest req, int status, JsonObject body) {
    req.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(body.encode());
  }
}
