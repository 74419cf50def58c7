package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reference agent's watch stream: one {@link NodeWatch} over its own HTTP/1.1 connection (HTTPS
 * coordinators: HTTP/2 when ALPN offers it is not needed for one stream), its log lines (one per change
 * of state: open, refused, ended, stopped; repeated failures at debug level), its metrics, and the
 * liveness tick. Heartbeats go on whatever the stream does; with no stream the agent lives on heartbeat
 * answers.
 */
final class AgentWatch implements NodeWatch.Host {
  private static final Logger LOG = LoggerFactory.getLogger(AgentWatch.class);
  static final long TICK_MS = 5_000;

  /** What the agent does for the stream. */
  interface Owner {
    /** A command arrived on the stream: send the heartbeat with its result now. */
    void beatNow();

    /** New routes (or a traffic policy) applied from the stream: acknowledge soon, at most one such heartbeat a second. */
    default void beatSoon() {
      beatNow();
    }

    String tag();
  }

  private final Vertx vertx;
  private final WatchTransport transport;
  private final NodeWatch watch;
  private final AgentMetrics metrics;
  private final Owner owner;
  private long ticker = -1;
  /** The stream failed or ended since it was last open: the next failure logs at debug level. */
  private boolean troubled;
  private volatile String stopped;

  AgentWatch(Vertx vertx, Coordinators coordinators, List<Coordinators.Target> targets, AgentSession session, AgentMetrics metrics, Owner owner) {
    this.vertx = vertx;
    this.metrics = metrics;
    this.owner = owner;
    this.transport = new WatchTransport(vertx, targets, new WatchTransport.Settings(false, 1, List.of(), 1));
    this.watch = new NodeWatch(vertx, transport, coordinators, session, this, 0);
  }

  /** Opens the stream and starts the liveness tick (on the agent's event loop). */
  void start() {
    if (ticker >= 0) return;
    watch.start();
    ticker = vertx.setPeriodic(TICK_MS, id -> watch.tick(System.currentTimeMillis()));
  }

  /** An owner hint in a heartbeat answer. */
  void hint(Object value) {
    watch.hint(value);
  }

  Future<Void> close() {
    if (ticker >= 0) vertx.cancelTimer(ticker);
    watch.close();
    return transport.close();
  }

  /** For /info: {@code {state, coordinator}}; {@code stopped} carries why. */
  JsonObject info() {
    JsonObject j = new JsonObject().put("state", watch.state().name().toLowerCase(java.util.Locale.ROOT)).put("coordinator", watch.url());
    if (stopped != null) j.put("stopped", stopped);
    return j;
  }

  boolean open() {
    return watch.state() == NodeWatch.State.OPEN;
  }

  // ---- NodeWatch.Host ----

  @Override
  public void streamOpened(NodeWatch w, String url) {
    metrics.watchConnect("opened");
    if (troubled) LOG.info("{} watch stream open again at {}", owner.tag(), url);
    else LOG.info("{} watch stream open at {}", owner.tag(), url);
    troubled = false;
  }

  @Override
  public void streamRefused(NodeWatch w, String url, Reply r, long waitMs) {
    metrics.watchConnect(r.status() > 0 ? "refused" : "error");
    String line = "{} watch stream not opened at {}: {}; {}";
    String next = waitMs < 0 ? "no more attempts with this credential" : "next attempt in " + waitMs + " ms (heartbeats carry on)";
    if (!troubled || waitMs < 0) LOG.warn(line, owner.tag(), url, r.describe(), next);
    else LOG.debug(line, owner.tag(), url, r.describe(), next);
    troubled = true;
  }

  @Override
  public void streamBytes(NodeWatch w, int bytes) {
    metrics.received(bytes);
  }

  @Override
  public void streamMessage(NodeWatch w, String type) {
    metrics.watchMessage(type);
  }

  @Override
  public void streamAnswer(NodeWatch w, JsonObject answer, String kind, long delayMs, long aclBefore, int peersReceived) {
    LOG.debug("{} stream answer ({}): peers version {}, acl version {}", owner.tag(), kind, w.session().peersVersion(), w.session().aclVersion());
  }

  @Override
  public void streamEnded(NodeWatch w, String url, String reason, long openForMs, long waitMs) {
    if (waitMs < 0) return; // streamStopped says it
    String line = "{} watch stream at {} ended ({}) after {} s; next attempt in {} ms";
    if (!troubled && !"moved".equals(reason)) LOG.warn(line, owner.tag(), url, reason, openForMs / 1000, waitMs);
    else LOG.debug(line, owner.tag(), url, reason, openForMs / 1000, waitMs);
    troubled = !"moved".equals(reason);
  }

  @Override
  public void streamStopped(NodeWatch w, String why) {
    stopped = why;
    LOG.error("{} watch stream stopped: {}; heartbeats carry on", owner.tag(), why);
  }

  @Override
  public void beatSoon(NodeWatch w) {
    owner.beatSoon();
  }

  @Override
  public void beatNow(NodeWatch w) {
    owner.beatNow();
  }

  @Override
  public void coordinatorMoved(NodeWatch w, String from, String to) {
    LOG.info("{} following the owner hint: requests move from {} to {}", owner.tag(), from, to);
  }
}
