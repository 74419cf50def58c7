package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/**
 * The agent's own listener ({@code --listen}, loopback by default): {@code /healthz}, {@code /readyz} (and {@code /readyz/ingress}, the ingress listener alone),
 * {@code /metrics}, {@code /info} and {@code /peers/{id}/tls} ({@link PeerTlsRoute}). Nothing it serves reveals the credential or the private key.
 * Plain vertx-core: five GET routes need no router.
 */
final class AgentListener {
  private final AgentVerticle agent;

  AgentListener(AgentVerticle agent) {
    this.agent = agent;
  }

  Future<HttpServer> listen(Vertx vertx, String host, int port) {
    return vertx.createHttpServer(new HttpServerOptions().setIdleTimeout(30).setMaxInitialLineLength(1024).setMaxHeaderSize(8192))
        .requestHandler(this::handle)
        .listen(port, host);
  }

  private void handle(HttpServerRequest req) {
    req.response().putHeader("Cache-Control", "no-store");
    String path = req.path();
    boolean known = path.equals("/healthz") || path.equals("/readyz") || path.equals("/readyz/ingress") || path.equals("/metrics") || path.equals("/info")
        || PeerTlsRoute.matches(path);
    if (!known) {
      json(req, 404, new JsonObject().put("status", 404).put("title", "Not Found").put("detail", "no such path; try /healthz, /readyz, /metrics, /info or /peers/{node id}/tls"));
      return;
    }
    if (req.method() != HttpMethod.GET && req.method() != HttpMethod.HEAD) {
      req.response().putHeader(HttpHeaders.ALLOW, "GET, HEAD");
      json(req, 405, new JsonObject().put("status", 405).put("title", "Method Not Allowed").put("detail", path + " answers GET only"));
      return;
    }
    if (PeerTlsRoute.matches(path)) {
      PeerTlsRoute.handle(req, agent);
      return;
    }
    long now = System.currentTimeMillis();
    switch (path) {
      case "/healthz" -> json(req, 200, new JsonObject().put("status", "UP"));
      case "/readyz" -> {
        String why = agent.notReady(now);
        if (why == null) json(req, 200, new JsonObject().put("status", "UP"));
        else json(req, 503, new JsonObject().put("status", "DOWN").put("reason", why));
      }
      case "/readyz/ingress" -> {
        // the ingress listener alone (a balancer's check): 503 from the first moment of a drain
        IngressEdge edge = agent.ingress();
        String why = edge == null ? "this agent runs no ingress listener (--ingress-listen)" : edge.notReady();
        if (why == null) json(req, 200, new JsonObject().put("status", "UP"));
        else json(req, 503, new JsonObject().put("status", "DOWN").put("reason", why));
      }
      case "/metrics" -> {
        StringBuilder text = new StringBuilder(agent.metrics.scrape(agent.gauges(now)));
        IngressEdge edge = agent.ingress();
        if (edge != null) edge.writeMetrics(text, now);
        req.response().putHeader(HttpHeaders.CONTENT_TYPE, AgentMetrics.CONTENT_TYPE).end(text.toString());
      }
      default -> json(req, 200, info(now));
    }
  }

  private JsonObject info(long now) {
    AgentSession s = agent.session();
    long lastOk = agent.lastOkMs();
    JsonArray coordinators = new JsonArray();
    agent.targets().forEach(t -> coordinators.add(t.url()));
    return new JsonObject()
        .put("node_id", s.nodeId())
        .put("name", s.name())
        .put("address", s.address())
        .put("public_key", s.publicKey())
        .put("relay", s.relay())
        .put("enrolled", s.isEnrolled())
        .put("ready", agent.notReady(now) == null)
        .put("coordinator", agent.coordinatorUrl())
        .put("coordinators", coordinators)
        .put("interval_s", s.intervalMs(0) / 1000)
        .put("last_heartbeat", lastOk == 0 ? null : Instant.ofEpochMilli(lastOk).toString())
        .put("peers", new JsonObject().put("count", s.peerCount()).put("version", s.peersVersion() < 0 ? null : s.peersVersion()))
        .put("acl", new JsonObject().put("rules", s.aclRuleCount()).put("version", s.aclVersion() < 0 ? null : s.aclVersion()))
        .put("ingress", s.ingress())
        .put("services", s.services())
        .put("watch", agent.watchInfo())
        .put("certificate", s.pki() == null ? null : s.pki().info(now))
        .put("mesh_tls", agent.meshTlsInfo())
        .put("ingress_listener", agent.ingress() == null ? new JsonObject().put("state", "off") : agent.ingress().info())
        .put("agent_version", AgentSession.AGENT_VERSION)
        .put("uptime_s", (now - agent.startedAtMs()) / 1000);
  }

  private static void json(HttpServerRequest req, int status, JsonObject body) {
    req.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(body.encode());
  }
}
