package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.KeyCertOptions;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's ingress edge, its one door: the ingress listeners ({@link IngressListener}) serving the
 * routes the coordinator gave ({@link IngressRoutes}, swapped whole), forwarding with
 * {@link IngressProxy}, counting per route ({@link IngressCounters}) and, for {@code tls: acme} routes,
 * holding certificates obtained over ACME ({@link IngressAcme}), for {@code tls: meshca} routes one from
 * MeshCA ({@link IngressMeshca}). What the session sees of it
 * ({@link AgentSession.Edge}): the heartbeat's {@code ingress_routes} report and the drain of
 * {@code drain_ingress}. On the agent's event loop.
 */
final class IngressEdge implements AgentSession.Edge {
  private static final Logger LOG = LoggerFactory.getLogger(IngressEdge.class);
  static final long DEFAULT_GRACE_S = 120;
  static final long MAX_GRACE_S = 3600;

  /**
   * What the agent's command line says of its ingress.
   *
   * @param tlsPort -1: no TLS listener
   * @param targetOverrides a mesh address → the address dialled instead ({@code --ingress-target-override}; tests without WireGuard)
   * @param acmeDirectory null: no ACME (a {@code tls: acme} route is served on the plain listener only)
   * @param acmeRenewEveryMs 0: renew at 2/3 of a certificate's lifetime
   * @param sourceOverrides a client address → the mesh address it is taken for ({@code --ingress-source-override}; tests without WireGuard)
   * @param drainLingerMs how long at most a drain keeps the sockets bound for idle keep-alive connections to bring a last request
   */
  record Settings(String host, int port, String tlsHost, int tlsPort, Map<String, String> targetOverrides, URI acmeDirectory,
      Path acmeTrust, long acmeRenewEveryMs, long connectTimeoutMs, long idleTimeoutMs, long drainLingerMs, Map<String, String> sourceOverrides) {
    Settings {
      targetOverrides = Map.copyOf(targetOverrides);
      sourceOverrides = Map.copyOf(sourceOverrides);
    }

    Settings(String host, int port) {
      this(host, port, null, -1, Map.of(), null, null, 0, 5_000, 120_000, IngressListener.LINGER_MS, Map.of());
    }

    Settings withTls(String h, int p) {
      return new Settings(host, port, h, p, targetOverrides, acmeDirectory, acmeTrust, acmeRenewEveryMs, connectTimeoutMs, idleTimeoutMs, drainLingerMs, sourceOverrides);
    }

    Settings withOverrides(Map<String, String> o) {
      return new Settings(host, port, tlsHost, tlsPort, o, acmeDirectory, acmeTrust, acmeRenewEveryMs, connectTimeoutMs, idleTimeoutMs, drainLingerMs, sourceOverrides);
    }

    /** {@code --ingress-drain-linger-ms}: how long at most a drain waits for idle keep-alive connections' last request. */
    Settings withDrainLinger(long ms) {
      return new Settings(host, port, tlsHost, tlsPort, targetOverrides, acmeDirectory, acmeTrust, acmeRenewEveryMs, connectTimeoutMs, idleTimeoutMs, ms, sourceOverrides);
    }

    /** {@code --ingress-source-override}: a client address taken as this mesh address (tests without WireGuard). */
    Settings withSourceOverrides(Map<String, String> o) {
      return new Settings(host, port, tlsHost, tlsPort, targetOverrides, acmeDirectory, acmeTrust, acmeRenewEveryMs, connectTimeoutMs, idleTimeoutMs,
          drainLingerMs, o);
    }

    Settings withAcme(URI directory, Path trust, long renewEveryMs) {
      return new Settings(host, port, tlsHost, tlsPort, targetOverrides, directory, trust, renewEveryMs, connectTimeoutMs, idleTimeoutMs, drainLingerMs, sourceOverrides);
    }
  }

  private final Vertx vertx;
  private final Settings settings;
  private final String tag;
  private final IngressCounters counters = new IngressCounters();
  private final IngressAcme acme;
  private final IngressMeshca meshca;
  private final HttpClient client;
  private final IngressListener listener;
  private final EdgeWaf waf;
  private volatile IngressRoutes table = IngressRoutes.NONE;
  /** When a coordinator's answer last said the routes in use are current (epoch ms; -1: never): the config age's origin. */
  private long confirmedAtMs = -1;

  /**
   * @param meshPeer a mesh address → the id of the node's peer there, or null (the session's peer book): who may use
   *     {@code exposure: mesh} routes
   */
  /**
   * @param beatNow send a heartbeat now (a drain finished)
   * @param beatSoon acknowledge soon (a traffic policy applied; the agent spaces these)
   */
  IngressEdge(Vertx vertx, Settings settings, String tag, Runnable beatNow, Runnable beatSoon, Function<String, String> meshPeer) {
    this.vertx = vertx;
    this.settings = settings;
    this.tag = tag;
    this.acme = settings.acmeDirectory() == null ? null
        : new IngressAcme(vertx, settings.acmeDirectory(), settings.acmeTrust(), settings.acmeRenewEveryMs(), tag);
    this.meshca = new IngressMeshca(vertx, tag);
    this.client = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout((int) settings.connectTimeoutMs())
        .setIdleTimeout((int) Math.max(1, settings.idleTimeoutMs() / 1000)).setKeepAlive(true).setKeepAliveTimeout(30)
        .setMaxHeaderSize(16_384).setMaxInitialLineLength(8192), new PoolOptions().setHttp1MaxSize(256).setMaxWaitQueueSize(4096));
    // a policy applied (or refused) is probed through this node's own listener, then acknowledged at once
    this.waf = new EdgeWaf(vertx, tag, () -> WafProbe.run(this).onComplete(ar -> beatSoon.run()));
    IngressProxy proxy = new IngressProxy(client, () -> table, counters, settings.targetOverrides(), settings.connectTimeoutMs(),
        settings.idleTimeoutMs(), token -> acme == null ? null : acme.answer(token), meshPeer, settings.sourceOverrides(), waf);
    HttpServerOptions plain = new HttpServerOptions().setIdleTimeout((int) Math.max(1, settings.idleTimeoutMs() / 1000))
        .setMaxInitialLineLength(8192).setMaxHeaderSize(16_384).setMaxChunkSize(8192);
    HttpServerOptions tls = settings.tlsPort() < 0 ? null : new HttpServerOptions(plain).setSsl(true).setSslHandshakeTimeout(10)
        .setKeyCertOptions(KeyCertOptions.wrap(meshca.keyManager(acme == null ? null : acme.keyManager())));
    this.listener = new IngressListener(vertx, settings.host(), settings.port(), plain, settings.tlsPort(), tls, settings.drainLingerMs(), proxy::handle, () -> {
      IngressListener.Drained d = listener().result();
      if (d != null) {
        LOG.info("{} ingress drain {} finished: {} ({} open connections, {} requests answered during the drain, {} ms)", tag(),
            d.op() == null ? "(state)" : d.op(), d.ok() ? "drained" : "failed", d.openConnections(), d.requestsDuringDrain(), d.tookMs());
      }
      beatNow.run();
    });
  }

  private IngressListener listener() {
    return listener;
  }

  private String tag() {
    return tag;
  }

  Future<Void> start() {
    return listener.listen().onSuccess(v -> LOG.info("{} ingress listening on {}:{}{}", tag, settings.host(), listener.plainPort(),
        listener.tlsPort() < 0 ? "" : " and TLS on " + settings.tlsHost() + ":" + listener.tlsPort()))
        .recover(e -> Future.failedFuture(new IllegalStateException("--ingress-listen: cannot listen on " + settings.host() + ":"
            + settings.port() + (settings.tlsPort() >= 0 ? " (or --ingress-tls-listen " + settings.tlsHost() + ":" + settings.tlsPort() + ")" : "")
            + ": " + e.getMessage(), e)));
  }

  /**
   * Takes a heartbeat answer's {@code ingress_routes} ({@code unchanged}, or a route list that replaces the
   * table whole) and its {@code ingress} (whether the listener should be drained: a drain undone, or
   * failed, opens it again).
   */
  @Override
  public String routesVersion() {
    return table.version();
  }

  @Override
  public void apply(Object block, Object ingress, boolean drainedBySelf) {
    if (block instanceof JsonObject b && b.getValue("routes") instanceof JsonArray && !(b.getValue("version") instanceof String v && v.equals(table.version()))) {
      try {
        IngressRoutes next = IngressRoutes.parse(b);
        counters.keepOnly(next.routes());
        table = next; // one reference: a request in flight keeps the table it matched in
        if (acme != null) acme.want(next.acmeHostnames());
        // without a TLS listener nothing would present it: no signature spent
        if (settings.tlsPort() >= 0) meshca.want(next.meshcaHostnames());
        LOG.info("{} ingress routes version {} applied: {} routes{}", tag, next.version(), next.routes().size(),
            next.skipped().isEmpty() ? "" : "; left out: " + String.join("; ", next.skipped()));
        // the traffic policy comes with every full block (null: none for this team and environment)
        waf.apply(b.getValue("waf"));
      } catch (IllegalArgumentException e) {
        LOG.warn("{} ingress routes not applied: {}", tag, e.getMessage());
      }
    }
    // an answer naming the version in use (unchanged, or the list just applied) confirms it current
    if (block instanceof JsonObject b && b.getValue("version") instanceof String v && v.equals(table.version())) {
      confirmedAtMs = System.currentTimeMillis();
    }
    // an answer without the node's ingress (a stream answer may lack it) says nothing of the drain
    if (!(ingress instanceof JsonArray)) return;
    boolean wantDrained = drainedBySelf;
    if (ingress instanceof JsonArray list) {
      for (Object o : list) {
        if (o instanceof JsonObject in && ("drained".equals(in.getValue("state")) || "draining".equals(in.getValue("state")))) wantDrained = true;
      }
    }
    if (!wantDrained && listener.draining() && listener.result() != null) {
      listener.undrain().onComplete(ar -> {
        if (ar.succeeded()) LOG.info("{} ingress listener open again on {}:{} (no ingress of the node is drained)", tag, settings.host(), listener.plainPort());
        else LOG.error("{} ingress listener could not open again: {}", tag, ar.cause().getMessage());
      });
    } else if (wantDrained && !listener.draining()) {
      // drained before a restart, or by the coordinator: the listener takes no traffic
      listener.drain(null, DEFAULT_GRACE_S * 1000);
    }
  }

  @Override
  public void revocations(java.util.function.Predicate<String> revokedSerial) {
    meshca.renewIfRevoked(revokedSerial);
  }

  @Override
  public void writeReport(StringBuilder sb) {
    IngressRoutes t = table;
    if (t.version() == null) return;
    Map<String, Long> notAfters = new java.util.HashMap<>(meshca.notAfters());
    if (acme != null) notAfters.putAll(acme.notAfters());
    counters.write(sb, t, IngressMeshca.merged(acme == null ? Map.of() : acme.serials(), meshca.serials()), notAfters,
        acme == null ? Map.of() : acme.errors(), meshca.errors(), waf);
  }

  @Override
  public CommandLedger.Result drain(String opId, String kind, JsonObject command) {
    long graceS = DEFAULT_GRACE_S;
    if (command.getValue("grace_s") instanceof Number n && n.longValue() >= 1 && n.longValue() <= MAX_GRACE_S) graceS = n.longValue();
    IngressListener.Drained d = listener.drain(opId, graceS * 1000);
    if (d == null) return null;
    String evidence = "{\"open_connections\":" + d.openConnections() + ",\"requests_during_drain\":" + d.requestsDuringDrain() + "}";
    if (d.ok()) return new CommandLedger.Result(opId, kind, "succeeded", "drained with evidence " + evidence);
    return new CommandLedger.Result(opId, kind, "failed", d.openConnections() + " connections still open at the grace deadline ("
        + graceS + " s); evidence " + evidence);
  }

  /** Appends the edge's {@code mesh_ingress_*} families to a scrape of /metrics ({@link IngressMetrics}). */
  void writeMetrics(StringBuilder sb, long nowMs) {
    IngressMetrics.write(sb, table, counters, acme, meshca, listener.openConnections(), confirmedAtMs, nowMs);
    WafMetrics.write(sb, table, counters, waf);
  }

  /** Why the ingress listener takes no traffic, or null. */
  String notReady() {
    if (!listener.draining()) return null;
    IngressListener.Drained d = listener.result();
    return d == null ? "the ingress listener is draining (" + listener.openConnections() + " connections open)" : "the ingress listener is drained";
  }

  /** For /info. */
  JsonObject info() {
    IngressRoutes t = table;
    return new JsonObject().put("state", listener.draining() ? (listener.result() == null ? "draining" : "drained") : "open")
        .put("port", listener.plainPort()).put("tls_port", listener.tlsPort() < 0 ? null : listener.tlsPort())
        .put("routes_version", t.version()).put("routes", t.routes().size()).put("open_connections", listener.openConnections())
        .put("waf", waf.info());
  }

  /** Where the edge reaches its own plain listener (the probe): its address, or loopback when it listens on every address. */
  String selfHost() {
    String h = settings.host();
    return h == null || h.equals("0.0.0.0") || h.equals("::") || h.equals("[::]") ? "127.0.0.1" : h;
  }

  int plainPort() {
    return listener.plainPort();
  }

  int tlsPort() {
    return listener.tlsPort();
  }

  IngressAcme acme() {
    return acme;
  }

  /** The MeshCA certificate of the {@code tls: meshca} routes. */
  IngressMeshca meshca() {
    return meshca;
  }

  IngressRoutes table() {
    return table;
  }

  IngressCounters counters() {
    return counters;
  }

  EdgeWaf waf() {
    return waf;
  }

  HttpClient client() {
    return client;
  }

  Future<Void> close() {
    if (acme != null) acme.close();
    meshca.close();
    waf.close();
    return Future.join(listener.close(), client.close()).mapEmpty();
  }
}
