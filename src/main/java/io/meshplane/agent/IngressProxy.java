package io.meshplane.agent;

import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.HostAndPort;
import io.vertx.core.net.SocketAddress;
import io.vertx.httpproxy.ProxyRequest;
import io.vertx.httpproxy.ProxyResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One request on the ingress listener: the route it matches (the table in force when it arrived, kept
 * to its end), forwarded with vertx-http-proxy to the target's mesh address, bodies streamed both ways
 * (never buffered), hop-by-hop headers removed (the fixed set and those the {@code Connection} header
 * names) and the {@code X-Forwarded-*} headers set; counted per route. No route: the product's 404
 * problem ({@code no_route}). The target unreachable or failing before its answer, or a route whose target
 * the coordinator says is gone or unbound (it is sent so that its rule still matches first): a 502
 * problem ({@code bad_gateway}), counted as an error. A route with {@code exposure: mesh} is served only to
 * a client whose address is the mesh address of one of this node's peers (the policy lets them reach
 * each other); anyone else gets a 403 problem ({@code mesh_only}).
 */
final class IngressProxy {
  static final String ACME_PREFIX = "/.well-known/acme-challenge/";
  private static final List<String> HOP_BY_HOP = List.of("connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
      "proxy-connection", "proxy-authenticate", "proxy-authorization");
  private static final int MAX_DETAIL = 300;

  private final HttpClient client;
  private final Supplier<IngressRoutes> table;
  private final IngressCounters counters;
  /** A mesh address → the address actually dialled ({@code --ingress-target-override}); empty in production. */
  private final Map<String, String> overrides;
  private final long connectTimeoutMs;
  private final long idleTimeoutMs;
  /** The key authorization of an HTTP-01 token the agent is answering, or null. */
  private final Function<String, String> acmeAnswer;
  /** A mesh address → the id of this node's peer there, or null (the node's peer book). */
  private final Function<String, String> meshPeer;
  /** A client address → the mesh address it is taken for ({@code --ingress-source-override}); empty in production. */
  private final Map<String, String> sourceOverrides;

  /** The traffic policy in force (API.md §20); its decisions are taken off the event loop. */
  private final EdgeWaf waf;

  IngressProxy(HttpClient client, Supplier<IngressRoutes> table, IngressCounters counters, Map<String, String> overrides,
      long connectTimeoutMs, long idleTimeoutMs, Function<String, String> acmeAnswer, Function<String, String> meshPeer,
      Map<String, String> sourceOverrides, EdgeWaf waf) {
    this.waf = waf;
    this.meshPeer = meshPeer;
    this.sourceOverrides = Map.copyOf(sourceOverrides);
    this.client = client;
    this.table = table;
    this.counters = counters;
    this.overrides = Map.copyOf(overrides);
    this.connectTimeoutMs = connectTimeoutMs;
    this.idleTimeoutMs = idleTimeoutMs;
    this.acmeAnswer = acmeAnswer;
  }

  void handle(HttpServerRequest req) {
    String path = req.path();
    if (!req.isSSL() && path != null && path.startsWith(ACME_PREFIX)) {
      String answer = acmeAnswer.apply(path.substring(ACME_PREFIX.length()));
      if (answer != null) {
        req.response().putHeader(HttpHeaders.CONTENT_TYPE, "application/octet-stream").end(answer);
        return;
      }
    }
    HostAndPort authority = req.authority();
    if (authority == null || authority.host() == null || authority.host().isEmpty()) {
      problem(req, 400, "invalid_request", "Bad Request", "Host: the request names no host");
      return;
    }
    String host = authority.host().toLowerCase(Locale.ROOT);
    if (host.endsWith(".")) host = host.substring(0, host.length() - 1);
    if (IngressRoutes.unsafePath(path)) {
      problem(req, 400, "invalid_request", "Bad Request", "path: a dot segment, an encoded slash or a backslash is not routed");
      return;
    }
    IngressRoutes.Route route = table.get().match(host, path);
    if (route == null) {
      problem(req, 404, "no_route", "Not Found", "no ingress route for " + host + path);
      return;
    }
    forward(req, route);
  }

  private void forward(HttpServerRequest req, IngressRoutes.Route route) {
    IngressCounters.Route c = counters.of(route.id());
    c.requests++;
    c.active++;
    HttpServerResponse resp = req.response();
    boolean[] counted = {false};
    // answered in full: its status class; the client gone first: no class (its bytes still count)
    resp.bodyEndHandler(v -> {
      if (counted[0]) return;
      counted[0] = true;
      c.answered(resp.getStatusCode(), req.bytesRead(), resp.bytesWritten());
    });
    resp.closeHandler(v -> {
      if (counted[0]) return;
      counted[0] = true;
      c.answered(0, req.bytesRead(), resp.bytesWritten());
    });
    String probe = req.getHeader(io.meshplane.waf.Waf.PROBE_HEADER);
    EdgeWaf.Part probed = probe == null ? null : waf.probeOf(probe);
    if (probed != null) {
      // the probe rule every policy version carries: its answer proves the version is in this node's request path
      resp.putHeader("X-Meshplane-Waf-Version", Long.toString(probed.version()));
      problem(req, 403, "waf_probe", "Forbidden", "traffic policy version " + probed.version() + " is in this ingress node's request path");
      return;
    }
    String meshIdentity = "";
    if (!route.publicExposure()) {
      String client = client(req);
      meshIdentity = client == null ? null : meshPeer.apply(client);
      if (meshIdentity == null) {
        problem(req, 403, "mesh_only", "Forbidden", "ingress route " + route.id() + " is served to mesh members only, and "
            + (client == null ? "the client's address is unknown" : client + " is not the mesh address of a peer of this ingress node"));
        return;
      }
    }
    if (waf.held().active()) {
      inspect(req, route, c, meshIdentity);
      return;
    }
    send(req, route, c, null);
  }

  /**
   * The traffic policy's decision first: the body's first {@link io.meshplane.waf.Waf#BODY_PREFIX} bytes
   * read, the request evaluated on the WAF's workers, then refused ({@code waf_denied}, or
   * {@code rate_limited} with 429) or sent on with the bytes already read. Shadow decisions are counted
   * and sampled, never applied. An evaluation that cannot run (the workers gone) lets the request through,
   * counted as an error; evaluators full refuse it (503 {@code waf_busy}).
   */
  private void inspect(HttpServerRequest req, IngressRoutes.Route route, IngressCounters.Route c, String meshIdentity) {
    IngressCounters.Waf w = c.waf();
    BodyPrefix.read(req, io.meshplane.waf.Waf.BODY_PREFIX).onComplete(read -> {
      HttpServerResponse resp = req.response();
      if (read.failed() || resp.closed()) return; // the client went away: counted by the close handler
      BodyPrefix body = read.result();
      if (!waf.admit()) {
        w.busy++;
        resp.putHeader("Retry-After", "1");
        if (!body.ended()) resp.putHeader(HttpHeaders.CONNECTION, "close");
        problem(req, 503, "waf_busy", "Service Unavailable", "the ingress node's traffic policy evaluators are full; retry");
        return;
      }
      List<Map.Entry<String, String>> headers = new ArrayList<>(req.headers().size());
      for (Map.Entry<String, String> h : req.headers()) headers.add(Map.entry(h.getKey(), h.getValue()));
      String ip = client(req);
      io.meshplane.waf.Waf.Request wr = new io.meshplane.waf.Waf.Request(req.method().name(), req.uri(), headers, ip,
          body.buffer().getBytes(0, Math.min(body.buffer().length(), io.meshplane.waf.Waf.BODY_PREFIX)), body.size(), meshIdentity);
      waf.evaluate(wr, route.id()).onComplete(ar -> {
        if (resp.closed()) return;
        if (ar.failed()) {
          w.errors++; // fail-open: the evaluation could not run
          send(req, route, c, body);
          return;
        }
        EdgeWaf.Verdict v = ar.result();
        w.evaluated++;
        io.meshplane.waf.Waf.Decision e = v.enforced();
        io.meshplane.waf.Waf.Decision s = v.shadow();
        if ((e != null && !e.errors().isEmpty()) || (s != null && !s.errors().isEmpty())) w.errors++;
        if (e != null) {
          for (String id : e.logged()) {
            w.logged++;
            w.hit(id);
          }
        }
        if (s != null && s.denied()) {
          w.wouldDeny++;
          waf.sample(WafSample.of(route.id(), s.rule(), "would_deny", s.status(), req.method().name(), req.uri(), req.headers(), ip, body.buffer()));
        }
        if (e == null || !e.denied()) {
          send(req, route, c, body);
          return;
        }
        if (e.rateLimited()) w.rateLimited++;
        else w.denied++;
        w.hit(e.rule());
        waf.sample(WafSample.of(route.id(), e.rule(), "deny", e.status(), req.method().name(), req.uri(), req.headers(), ip, body.buffer()));
        if (!body.ended()) resp.putHeader(HttpHeaders.CONNECTION, "close"); // the rest of the body is never read
        denied(req, e, v.held().enforce().version());
      });
    });
  }

  /** A denial's problem: {@code waf_denied} (or {@code rate_limited}), the rule's title, the rule, the policy version, a request id. */
  private static void denied(HttpServerRequest req, io.meshplane.waf.Waf.Decision d, long version) {
    // the client's id when it sent a sane one (its logs can then find the denial), else a new one, as the coordinator does
    String requestId = io.meshplane.http.RequestIds.choose(req.getHeader(io.meshplane.http.RequestIds.HEADER));
    String code = d.rateLimited() ? "rate_limited" : "waf_denied";
    JsonObject body = new JsonObject().put("type", "urn:meshplane:problem:" + code).put("title", d.title()).put("status", d.status())
        .put("code", code).put("detail", "refused by rule " + d.rule() + " of traffic policy version " + version).put("rule", d.rule())
        .put("policy_version", version).put("request_id", requestId);
    req.response().setStatusCode(d.status()).putHeader(HttpHeaders.CONTENT_TYPE, "application/problem+json")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-store").putHeader("X-Request-Id", requestId).end(body.encode());
  }

  /** Sends the request on to the route's target; {@code body}: what the WAF read of it first (null: nothing read, the body streams as it comes). */
  private void send(HttpServerRequest req, IngressRoutes.Route route, IngressCounters.Route c, BodyPrefix body) {
    HttpServerResponse resp = req.response();
    IngressRoutes.Target t = route.target();
    if (t.unavailable() != null) {
      c.errors++;
      problem(req, 502, "bad_gateway", "Bad Gateway", "ingress route " + route.id() + ": its target is " + t.unavailable() + " (node "
          + t.node() + ", service " + t.service() + ")");
      return;
    }
    ProxyRequest proxied = ProxyRequest.reverseProxy(req); // pauses the request: its body is piped, never buffered
    if (body != null) {
      proxied.headers().remove("expect"); // answered by the edge already: the target gets the body at once
      // the bytes the WAF read go first; a body read whole is sent as it is, else the rest streams behind them
      proxied.setBody(body.ended() ? io.vertx.httpproxy.Body.body(body.buffer())
          : io.vertx.httpproxy.Body.body(body.stream(), req.headers().contains("content-length") ? body.size() : -1));
    }
    cleanRequest(proxied.headers(), req, route);
    HostAndPort asked = req.authority();
    if (asked != null) proxied.setAuthority(asked); // the target sees the Host the client asked for, not its own address
    String address = overrides.getOrDefault(t.address(), t.address());
    client.request(new RequestOptions().setHost(address).setPort(t.port()).setConnectTimeout(connectTimeoutMs).setIdleTimeout(idleTimeoutMs))
        .compose(proxied::send)
        .onComplete(ar -> {
          if (ar.failed()) {
            c.errors++;
            proxied.release();
            if (!resp.headWritten() && !resp.closed()) {
              problem(req, 502, "bad_gateway", "Bad Gateway", "ingress route " + route.id() + ": the target " + t.address() + ":" + t.port()
                  + " did not answer (" + reason(ar.cause()) + ")");
            } else {
              resp.reset();
            }
            return;
          }
          ProxyResponse answer = ar.result();
          cleanHopByHop(answer.headers());
          answer.send().onFailure(e -> c.errors++);
        });
  }

  /**
   * Removes the hop-by-hop headers and sets the forwarding ones: {@code X-Forwarded-For} is the client's
   * address, appended to what came only on a mesh-exposed route (a public client's own claim is
   * replaced), {@code X-Forwarded-Proto} and {@code X-Forwarded-Host} say what the client asked for.
   * The {@code Host} header goes to the target unchanged.
   */
  static void cleanRequest(MultiMap h, HttpServerRequest req, IngressRoutes.Route route) {
    cleanHopByHop(h);
    SocketAddress remote = req.remoteAddress();
    String client = remote == null ? "unknown" : remote.hostAddress();
    String before = route.publicExposure() ? null : h.get("x-forwarded-for");
    h.remove("x-forwarded-for");
    h.remove("x-forwarded-proto");
    h.remove("x-forwarded-host");
    h.remove("forwarded");
    h.set("X-Forwarded-For", before == null || before.isBlank() ? client : before + ", " + client);
    h.set("X-Forwarded-Proto", req.isSSL() ? "https" : "http");
    HostAndPort a = req.authority();
    if (a != null) h.set("X-Forwarded-Host", a.port() > 0 ? a.host() + ":" + a.port() : a.host());
  }

  /** The fixed hop-by-hop set, {@code Proxy-*}, and every header the {@code Connection} header names. */
  static void cleanHopByHop(MultiMap h) {
    List<String> named = new ArrayList<>(2);
    for (String v : h.getAll("connection")) {
      for (String token : v.split(",")) {
        String n = token.trim().toLowerCase(Locale.ROOT);
        if (!n.isEmpty()) named.add(n);
      }
    }
    for (String n : named) h.remove(n);
    for (String n : HOP_BY_HOP) h.remove(n);
    List<String> proxyHeaders = new ArrayList<>(0);
    for (String n : h.names()) if (n.regionMatches(true, 0, "proxy-", 0, 6)) proxyHeaders.add(n);
    for (String n : proxyHeaders) h.remove(n);
  }

  /** The client's address as the mesh sees it (through {@code --ingress-source-override} in tests), or null. */
  private String client(HttpServerRequest req) {
    SocketAddress remote = req.remoteAddress();
    String ip = remote == null ? null : remote.hostAddress();
    return ip == null ? null : sourceOverrides.getOrDefault(ip, ip);
  }

  private static String reason(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.length() > 120 ? m.substring(0, 120) : m;
  }

  /** The product's problem document ({@code application/problem+json}). */
  static void problem(HttpServerRequest req, int status, String code, String title, String detail) {
    String d = detail.length() > MAX_DETAIL ? detail.substring(0, MAX_DETAIL) + "…" : detail;
    JsonObject body = new JsonObject().put("type", "urn:meshplane:problem:" + code).put("title", title).put("status", status)
        .put("code", code).put("detail", d);
    req.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, "application/problem+json")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-store").end(body.encode());
  }
}
