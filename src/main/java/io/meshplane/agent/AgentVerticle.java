package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reference agent: one node, its state dir, its listener and its heartbeat loop, all on one event
 * loop (state-dir writes go to a worker). {@link #start()} completes when the listener is bound; the
 * enrollment (once) and the heartbeats go on from there. Logs one line per state change, with the
 * node in brackets.
 */
final class AgentVerticle extends VerticleBase implements AgentSession.Events, AgentWatch.Owner {
  private static final Logger LOG = LoggerFactory.getLogger(AgentVerticle.class);

  private final NodeAgent.Settings settings;
  private final Promise<Integer> fatal;
  final AgentMetrics metrics = new AgentMetrics();
  private final long startedAtMs = System.currentTimeMillis();
  private final StringBuilder body = new StringBuilder(512);

  private StateDir dir;
  private AgentSession session;
  private Coordinators coordinators;
  private HttpServer listener;
  private MeshTls meshTls;
  /** The ingress edge ({@code --ingress-listen}); null: none. */
  private IngressEdge ingress;
  private long timer = -1;
  private boolean closing;
  /** The watch stream (null with --no-watch, or until the first accepted heartbeat). */
  private AgentWatch watch;
  /** A heartbeat is on its way; {@link #beatAgain}: send the next one as soon as it is answered. */
  private boolean inFlight;
  private boolean beatAgain;
  private final AckSpacing acks = new AckSpacing();
  /** When the scheduled heartbeat fires (epoch ms). */
  private long timerAtMs;

  /** Wall-clock time of the last accepted heartbeat, 0: none since start. */
  private volatile long lastOkMs;
  /** The last failure, for /readyz and logs; null after a success. */
  private volatile String lastError;
  /** Set while the coordinator refuses this node's heartbeats (401, 403, 404, ...). */
  private volatile String rejection;

  AgentVerticle(NodeAgent.Settings settings, Promise<Integer> fatal) {
    this.settings = settings;
    this.fatal = fatal;
  }

  @Override
  public Future<?> start() {
    coordinators = new Coordinators(vertx, settings.coordinators(), 4, 16);
    meshTls = new MeshTls(vertx, metrics);
    return vertx.executeBlocking(this::load)
        .compose(s -> {
          session = s;
          return new AgentListener(this).listen(vertx, settings.listenHost(), settings.listenPort());
        })
        .compose(server -> {
          listener = server;
          if (settings.ingress() == null) return Future.succeededFuture(server);
          ingress = new IngressEdge(vertx, settings.ingress(), tag(), this::beatNow, this::beatSoon, address -> session.peerAt(address));
          session.useEdge(ingress);
          // hostname certificates of tls=meshca routes: asked with the node's credential of the coordinator in use
          ingress.meshca().connect(body -> session.authorization() == null
              ? Future.succeededFuture(new Reply(0, null, "not_enrolled", "the node is not enrolled yet", 0, 0))
              : coordinators.post(session.coordinator(), IngressMeshca.PATH, session.authorization(), body));
          return ingress.start().map(server);
        })
        .compose(server -> {
          meshTls.publish(session.pki());
          if (settings.meshTlsPort() < 0) return Future.succeededFuture(server);
          return meshTls.listen(settings.meshTlsHost(), settings.meshTlsPort()).map(server).recover(e -> Future.failedFuture(
              new IllegalStateException("--mesh-tls: cannot listen on " + settings.meshTlsHost() + ":" + settings.meshTlsPort() + ": " + e.getMessage(), e)));
        })
        .onSuccess(server -> {
          LOG.info("agent listening on {}:{} (/healthz /readyz /metrics /info); state dir {}", settings.listenHost(), server.actualPort(),
              dir.path());
          if (meshTls.port() >= 0) {
            LOG.info("mesh TLS listening on {}:{} (mutual TLS with the node's MeshCA certificate; GET /identity)", settings.meshTlsHost(), meshTls.port());
          }
          if (session.isEnrolled()) {
            LOG.info("{} using the enrollment kept in {} (address {}); no new enrollment", tag(), dir.path(), session.address());
            schedule(0);
          } else {
            enroll();
          }
        });
  }

  @Override
  public Future<?> stop() {
    closing = true;
    if (timer >= 0) vertx.cancelTimer(timer);
    Future<Void> l = listener == null ? Future.succeededFuture() : listener.close();
    Future<Void> w = watch == null ? Future.succeededFuture() : watch.close();
    Future<Void> m = meshTls.close();
    Future<Void> i = ingress == null ? Future.succeededFuture() : ingress.close();
    // what changed since the last heartbeat is saved now, not lost with the stop: a certificate adopted a moment ago
    // would otherwise be asked for again after the restart, and held back by the coordinator as too young (REISSUE_AFTER)
    int parts = session == null ? 0 : session.takeDirty();
    Future<Void> s = parts == 0 ? Future.succeededFuture() : save(parts);
    return Future.join(List.of(l, w, m, i, s, coordinators.close()));
  }

  // ---- the state dir (blocking; on a worker) ----

  private AgentSession load() throws IOException {
    dir = StateDir.open(settings.stateDir());
    JsonObject keyJson = dir.read(StateDir.KEY);
    NodeKey key;
    if (keyJson == null) {
      key = NodeKey.x25519().generate();
      writeKey(key);
      LOG.info("generated the node's X25519 key pair (public key {}) in {}", key.publicKey(), dir.path());
    } else {
      key = readKey(keyJson);
    }
    AgentSession s = new AgentSession(settings.name(), key, NodeKey.x25519(), false, this, startedAtMs);
    JsonObject node = dir.read(StateDir.NODE);
    JsonObject credential = dir.read(StateDir.CREDENTIAL);
    if (node != null && credential != null) {
      String id = node.getValue("id") instanceof String v ? v : null;
      String token = credential.getValue("token") instanceof String v ? v : null;
      if (id == null || token == null) throw new IOException(dir.path() + ": node.json or credential.json lacks id/token; move the dir away to enroll anew");
      String storedName = node.getValue("name") instanceof String v ? v : settings.name();
      if (!storedName.equals(settings.name())) {
        LOG.warn("the state dir belongs to node {} ({}); --name {} is ignored", storedName, id, settings.name());
        s = new AgentSession(storedName, key, NodeKey.x25519(), false, this, startedAtMs);
      }
      s.identify(id, node.getValue("address") instanceof String a ? a : "", token);
    } else if (node != null || credential != null) {
      throw new IOException(dir.path() + " holds only one of node.json and credential.json; move the dir away to enroll anew");
    } else if (settings.enrollToken() == null) {
      throw new IOException("the node is not enrolled yet (no credential in " + dir.path() + "): --enroll-token is needed");
    }
    s.usePki(new AgentPki());
    s.restore(dir.read(StateDir.STATE));
    return s;
  }

  private static NodeKey readKey(JsonObject j) throws IOException {
    String pub = j.getValue("public_key") instanceof String v ? v : null;
    String priv = j.getValue("private_key") instanceof String v ? v : null;
    if (!NodeKey.wellFormedPublic(pub) || priv == null) throw new IOException("key.json: public_key or private_key missing or malformed");
    try {
      return new NodeKey(pub, Base64.getDecoder().decode(priv));
    } catch (IllegalArgumentException e) {
      throw new IOException("key.json: private_key is not base64");
    }
  }

  private void writeKey(NodeKey key) throws IOException {
    dir.write(StateDir.KEY, new JsonObject().put("public_key", key.publicKey())
        .put("private_key", Base64.getEncoder().encodeToString(key.privateKey())).put("created_at", Instant.now().toString()));
  }

  /** Saves what changed before the next heartbeat reports it (a result is only reported once it survives a crash). */
  private Future<Void> save(int parts) {
    JsonObject state = (parts & AgentSession.DIRTY_STATE) != 0 ? session.persistentState() : null;
    NodeKey key = (parts & AgentSession.DIRTY_KEY) != 0 ? session.key() : null;
    return vertx.<Void>executeBlocking(() -> {
      if (key != null) writeKey(key);
      if (state != null) dir.write(StateDir.STATE, state);
      return null;
    }).recover(e -> {
      session.markDirty(parts);
      LOG.error("{} cannot save to the state dir {}: {} (retried before the next heartbeat)", tag(), dir.path(), e.getMessage());
      return Future.succeededFuture();
    });
  }

  // ---- enrollment ----

  private void enroll() {
    if (closing) return;
    int index = session.coordinator();
    Buffer out = session.enrollmentBody(settings.tags());
    coordinators.post(index, "/nodes", "Bearer " + settings.enrollToken(), out).onComplete(ar -> {
      Reply r = ar.result();
      metrics.enrollAttempt(out.length(), r.bytesIn());
      String url = coordinators.target(index).url();
      if (r.status() == 201) {
        if (!session.enrolled(r.body())) {
          stop(3, "the enrollment answer from " + url + " lacks the node id or the credential");
          return;
        }
        JsonObject node = r.body().getJsonObject("node");
        JsonObject credential = r.body().getJsonObject("credential");
        JsonObject nodeFile = new JsonObject().put("id", session.nodeId()).put("name", session.name()).put("address", session.address())
            .put("tags", node.getValue("tags")).put("team", node.getValue("team")).put("environment", node.getValue("environment"))
            .put("coordinator", url).put("enrolled_at", Instant.now().toString());
        JsonObject credentialFile = new JsonObject().put("token", credential.getValue("token")).put("expires", credential.getValue("expires"));
        vertx.executeBlocking(() -> {
          dir.write(StateDir.CREDENTIAL, credentialFile);
          dir.write(StateDir.NODE, nodeFile);
          return null;
        }).onSuccess(v -> {
          LOG.info("{} enrolled via {}: address {}, credential valid until {}", tag(), url, session.address(), credential.getValue("expires"));
          lastError = null;
          schedule(0);
        }).onFailure(e -> stop(3, "enrolled as " + session.nodeId() + " but the credential could not be saved in " + dir.path() + ": "
            + e.getMessage() + " (delete the node and start again)"));
        return;
      }
      if (r.outcome() == Reply.Outcome.REJECTED || r.outcome() == Reply.Outcome.OK) {
        stop(3, "enrollment refused by " + url + ": " + r.describe());
        return;
      }
      lastError = r.describe();
      long wait = afterFailure(r, index);
      timer = vertx.setTimer(Math.max(1, wait), id -> {
        timer = -1;
        enroll();
      });
    });
  }

  private void stop(int code, String why) {
    LOG.error("[node: {}] {}", settings.name(), why);
    closing = true;
    fatal.tryComplete(code);
  }

  // ---- heartbeats ----

  private void schedule(long delayMs) {
    if (closing) return;
    timerAtMs = System.currentTimeMillis() + Math.max(1, delayMs);
    timer = vertx.setTimer(Math.max(1, delayMs), id -> {
      timer = -1;
      beat();
    });
  }

  private void beat() {
    if (closing) return;
    inFlight = true; // from the save on: beatNow() must not start a second chain of heartbeats
    acks.beatStarted();
    int parts = session.takeDirty();
    (parts == 0 ? Future.<Void>succeededFuture() : save(parts)).onComplete(x -> send());
  }

  private void send() {
    if (closing) return;
    int index = session.coordinator();
    Buffer out = session.heartbeatBody(body, System.currentTimeMillis());
    long t0 = System.nanoTime();
    coordinators.post(index, session.heartbeatPath(), session.authorization(), out).onComplete(ar -> {
      inFlight = false;
      Reply r = ar.result();
      metrics.heartbeat(r.outcome(), System.nanoTime() - t0, out.length(), r.bytesIn());
      if (closing) return;
      String url = coordinators.target(index).url();
      if (r.outcome() == Reply.Outcome.OK) {
        accepted(r, url);
      } else {
        failed(r, index);
      }
    });
  }

  private void accepted(Reply r, String url) {
    int failuresBefore = session.failures();
    boolean first = lastOkMs == 0;
    String wasRejected = rejection;
    try {
      session.apply(r.body());
    } catch (RuntimeException e) {
      // a malformed part of an answer must not stop the loop: what could be applied was
      LOG.warn("{} part of the answer from {} could not be applied: {}", tag(), url, e.toString());
    }
    lastOkMs = System.currentTimeMillis();
    lastError = null;
    rejection = null;
    if (settings.watch()) {
      if (watch == null) {
        // the stream starts once the coordinator took a heartbeat: the credential works and the node is live
        watch = new AgentWatch(vertx, coordinators, settings.coordinators(), session, metrics, this);
        watch.start();
      }
      watch.hint(r.body().getValue("coordinator"));
    } else {
      NodeWatch.follow(coordinators, session, r.body().getValue("coordinator"));
    }
    if (first) {
      LOG.info("{} first heartbeat accepted by {}: interval {} s, relay {}, {} peers (version {}), acl version {}", tag(), url,
          session.intervalMs(0) / 1000, session.relay() == null ? "none" : session.relay(), session.peerCount(), session.peersVersion(),
          session.aclVersion());
    } else if (failuresBefore > 0 || wasRejected != null) {
      LOG.info("{} heartbeats accepted again by {}: back-off ends after {} failed rounds", tag(), url, failuresBefore);
    }
    long wait = session.afterSuccess(settings.backoff(), 0);
    // new ingress routes applied from this answer: the next heartbeat reports them now, not an interval later
    if (session.takeRoutesToReport() | acks.pending) {
      acks.pending = false;
      wait = Math.min(wait, acks.delayMs());
    }
    if (beatAgain) {
      // a command arrived on the stream while this heartbeat was on its way: its result goes now
      beatAgain = false;
      session.pacing().takeResultsWaiting();
      wait = 0;
    }
    schedule(wait);
  }

  /** A command arrived on the watch stream: the heartbeat with its result goes now, not at the interval. */
  @Override
  public void beatNow() {
    if (closing) return;
    if (inFlight) {
      beatAgain = true;
      return;
    }
    if (timer >= 0) vertx.cancelTimer(timer);
    timer = -1;
    schedule(0);
  }

  /** New routes or a traffic policy applied: acknowledged at once or spaced ({@link AckSpacing}); a heartbeat due sooner carries it. */
  @Override
  public void beatSoon() {
    if (closing) return;
    if (inFlight) {
      acks.pending = true;
      return;
    }
    long at = System.currentTimeMillis() + acks.delayMs();
    if (timer >= 0 && timerAtMs <= at) return;
    if (timer >= 0) vertx.cancelTimer(timer);
    timer = -1;
    schedule(at - System.currentTimeMillis());
  }

  private void failed(Reply r, int index) {
    lastError = r.describe();
    if (r.outcome() == Reply.Outcome.REJECTED) {
      if (rejection == null) {
        LOG.error("{} heartbeat rejected by {}: {}; not ready, retrying with capped back-off (credential revoked or node deleted?)", tag(),
            coordinators.target(index).url(), r.describe());
      }
      rejection = r.describe();
    }
    schedule(afterFailure(r, index));
  }

  /** The shared failover and back-off rule, with its log lines. */
  private long afterFailure(Reply r, int index) {
    int failuresBefore = session.failures();
    long wait = session.afterFailure(r, settings.backoff(), coordinators.size(), 0);
    if (session.coordinator() != index) {
      metrics.failover();
      String line = "{} coordinator failover: {} failed ({}), trying {}";
      if (failuresBefore == 0) LOG.warn(line, tag(), coordinators.target(index).url(), r.describe(), coordinators.target(session.coordinator()).url());
      else LOG.debug(line, tag(), coordinators.target(index).url(), r.describe(), coordinators.target(session.coordinator()).url());
    }
    if (session.failures() == 1 && failuresBefore == 0 && r.outcome() != Reply.Outcome.REJECTED) {
      String what = r.outcome() == Reply.Outcome.UNAVAILABLE ? "unavailable" : "failed";
      LOG.warn("{} back-off starts: {} ({}); next try in {} ms, growing up to {} s", tag(),
          coordinators.size() > 1 && r.coordinatorsFault() ? "every coordinator " + what : "the coordinator " + what, r.describe(), wait,
          Backoff.capMs(session.intervalMs(0)) / 1000);
    }
    return wait;
  }

  // ---- AgentSession.Events ----

  @Override
  public void executed(CommandLedger.Result result) {
    metrics.command(result.kind(), result.status());
    LOG.info("{} command {} ({}) executed: {}{}", tag(), result.id(), result.kind(), result.status(),
        result.detail() == null ? "" : " - " + result.detail());
  }

  @Override
  public void relayChanged(String from, String to, String why) {
    if (from == null) LOG.info("{} relay {} adopted ({})", tag(), to, why);
    else LOG.info("{} relay switched from {} to {} ({})", tag(), from, to, why);
  }

  @Override
  public void keyRotated(String publicKey) {
    LOG.info("{} key rotated: new public key {}", tag(), publicKey);
  }

  @Override
  public void pki(AgentPki.Applied a) {
    AgentPki p = session.pki();
    long now = System.currentTimeMillis();
    meshTls.publish(p); // the next handshake presents, trusts and refuses by what the node holds now
    if (a.adopted()) LOG.info("{} certificate {} adopted: {}", tag(), p.serial(), p.info(now).encode());
    if (a.refused() != null) LOG.warn("{} issued certificate refused ({}); a new CSR in {} s", tag(), a.refused(), AgentPki.RETRY_MS / 1000);
    if (a.deferredS() > 0) LOG.info("{} certificate deferred by the coordinator (its signing budget, or the latest certificate is too young to replace): CSR again in {} s", tag(), a.deferredS());
    if (a.bundle()) LOG.info("{} trust bundle updated", tag());
    if (a.revocations()) LOG.info("{} revocation list at version {}", tag(), p.revocationsVersion());
  }

  @Override
  public void ignoredCommand(String why) {
    LOG.warn("{} ignored {}", tag(), why);
  }

  @Override
  public String tag() {
    return "[node: " + (session == null || session.nodeId() == null ? settings.name() : session.nodeId() + ", " + session.name()) + "]";
  }

  // ---- what the listener shows (read on this verticle's event loop) ----

  AgentSession session() {
    return session;
  }

  int listenerPort() {
    return listener.actualPort();
  }

  MeshTls meshTls() {
    return meshTls;
  }

  /** The {@code --mesh-tls} port as configured (-1: off, 0: any free port). */
  int meshTlsConfiguredPort() {
    return settings.meshTlsPort();
  }

  /** The mesh TLS listener for /info: {@code {state: "on", port}} or {@code {state: "off"}}. */
  JsonObject meshTlsInfo() {
    return meshTls.port() < 0 ? new JsonObject().put("state", "off")
        : new JsonObject().put("state", "on").put("host", settings.meshTlsHost()).put("port", meshTls.port());
  }

  String coordinatorUrl() {
    return coordinators.target(session.coordinator()).url();
  }

  long lastOkMs() {
    return lastOkMs;
  }

  long startedAtMs() {
    return startedAtMs;
  }

  IngressEdge ingress() {
    return ingress;
  }

  /** Why the agent is not ready, or null when it is: an ingress agent whose listener is draining is not. */
  String notReady(long nowMs) {
    String edge = ingress == null ? null : ingress.notReady();
    if (edge != null) return edge;
    String last = lastError == null ? "" : " (last attempt: " + lastError + ")";
    if (session == null || !session.isEnrolled()) return "not enrolled yet" + last;
    if (rejection != null) return "the coordinator rejects this node's heartbeats: " + rejection;
    if (lastOkMs == 0) return "no heartbeat accepted yet" + last;
    long limit = 3 * session.intervalMs(0);
    long age = nowMs - lastOkMs;
    if (age > limit) return "the last accepted heartbeat is " + age / 1000 + " s old, more than 3 intervals (" + limit / 1000 + " s)" + last;
    return null;
  }

  /** The watch stream for /info: {@code {state, coordinator}}, or {@code {state: "off"}}. */
  JsonObject watchInfo() {
    if (watch != null) return watch.info();
    return new JsonObject().put("state", settings.watch() ? "idle" : "off").putNull("coordinator");
  }

  AgentMetrics.Gauges gauges(long nowMs) {
    AgentSession s = session;
    boolean enrolled = s != null && s.isEnrolled();
    long since = lastOkMs == 0 ? startedAtMs : lastOkMs;
    return new AgentMetrics.Gauges(enrolled, notReady(nowMs) == null, s == null ? 0 : s.peerCount(), s == null ? -1 : s.peersVersion(),
        s == null ? 0 : s.aclRuleCount(), s == null ? -1 : s.aclVersion(), Math.max(0, nowMs - since) / 1000.0,
        (s == null ? AgentSession.DEFAULT_INTERVAL_MS : s.intervalMs(0)) / 1000.0, s == null ? 0 : s.failures(), startedAtMs / 1000.0,
        watch != null && watch.open(), s == null || s.pki() == null ? null : s.pki().expiresInSeconds(nowMs));
  }

  List<Coordinators.Target> targets() {
    return coordinators.targets();
  }
}
