package io.meshplane.agent;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * One node's watch stream (API.md §11 "The watch stream"), the same code for the reference agent and for
 * every node of the fleet simulator: opens {@code GET …/watch?peers=K&acl=K} with the node's credential,
 * splits the NDJSON lines ({@link NdjsonLines}), applies each {@code answer} line exactly like a heartbeat
 * answer ({@link AgentSession#apply}: same versions, never backwards), follows an owner hint that names a
 * configured coordinator, closes a stream that has been silent for {@link #SILENCE_MS} (not even a
 * {@code ping}), and re-opens it with {@link WatchBackoff}. A stream ended for {@code token_revoked},
 * {@code token_expired} or {@code node_deleted}, or refused with 401/403, is not re-opened: the
 * credential is done (the heartbeats report it). What happens is told to the {@link Host}: it counts,
 * logs, and sends a heartbeat at once when a command's result waits.
 *
 * <p>Runs on the owner's event loop (the session's); not thread-safe. The owner calls {@link #tick}
 * every few seconds for the liveness check.
 */
final class NodeWatch {
  /** A stream silent this long (not even a ping, which comes every 15 s) is closed and re-opened. */
  static final long SILENCE_MS = 45_000;
  /** An owner hint moves the stream at most once per this long (two replicas that disagree cannot make it flap). */
  static final long HINT_MOVE_MS = 30_000;
  /**
   * After a loss (a stream that ended or could not be opened), the stream re-opened somewhere stays there for a
   * random 60-120 s before an owner hint may move it: when a replica dies its agents re-open on the survivors, the
   * partitions migrate and the hints change, and moving every one of those streams again at once would be a second
   * storm. Heartbeats follow the hint at once (a request each, no stream to re-open).
   */
  static final long SETTLE_MIN_MS = 60_000;
  static final long SETTLE_SPREAD_MS = 60_000;
  /** A stream open a minute or more that hears of a new owner moves at a random point of this window. */
  static final long STABLE_SPREAD_MS = 60_000;
  /** A coordinator that refuses connections: the next one is tried after 0.1-1 s, not after the back-off. */
  static final long FAILOVER_MIN_MS = 100;
  static final long FAILOVER_SPREAD_MS = 900;
  static final String KIND_ACL = "acl";
  static final String KIND_PEERS = "peers";
  static final String KIND_COMMANDS = "commands";
  static final String KIND_OTHER = "other";
  private static final DoubleSupplier RANDOM = () -> ThreadLocalRandom.current().nextDouble();

  /** What the owner hears. Every method has a do-nothing default. */
  interface Host {
    /** A request for a stream is about to go out. */
    default void streamConnecting(NodeWatch w, String url) {}

    /** 200 with a stream. */
    default void streamOpened(NodeWatch w, String url) {}

    /** No stream: a refusal ({@code r.status()} > 0) or no answer ({@code r.error()}: connect, closed, ...). */
    default void streamRefused(NodeWatch w, String url, Reply r, long waitMs) {}

    /** Bytes of the stream's body arrived. */
    default void streamBytes(NodeWatch w, int bytes) {}

    /** One line arrived ({@code answer}, {@code ping}, {@code close}, or another type). */
    default void streamMessage(NodeWatch w, String type) {}

    /**
     * An {@code answer} line was applied.
     *
     * @param kind {@link #KIND_ACL}, {@link #KIND_PEERS}, {@link #KIND_COMMANDS} or {@link #KIND_OTHER}
     * @param delayMs from its {@code committed_at} to now; -1 for a stream's first answer (a catch-up whose
     *     {@code committed_at} is the replica's position) or without one
     * @param aclBefore the acl version held before
     * @param peersReceived peer entries it carried
     */
    default void streamAnswer(NodeWatch w, JsonObject answer, String kind, long delayMs, long aclBefore, int peersReceived) {}

    /**
     * An open stream ended ({@code reason}: a {@code close} reason, {@code silent}, {@code protocol}, {@code ended},
     * {@code moved}); every {@link #streamOpened} is followed by one of these, or by nothing when the owner closes.
     *
     * @param waitMs until the next attempt; -1: none ({@link #streamStopped} follows)
     */
    default void streamEnded(NodeWatch w, String url, String reason, long openForMs, long waitMs) {}

    /** No more attempts with this credential. */
    default void streamStopped(NodeWatch w, String why) {}

    /** A command arrived on the stream and was executed: send the heartbeat with its result now. */
    default void beatNow(NodeWatch w) {}

    /** An acknowledgement (routes applied): as {@link #beatNow}, but the host may space them (the agent: at most one a second). */
    default void beatSoon(NodeWatch w) {
      beatNow(w);
    }

    /** An owner hint moved the node's requests to coordinator {@code to}. */
    default void coordinatorMoved(NodeWatch w, String from, String to) {}
  }

  enum State { IDLE, CONNECTING, OPEN, WAITING, STOPPED }

  private final Vertx vertx;
  private final WatchTransport transport;
  private final Coordinators coordinators;
  private final AgentSession session;
  private final Host host;
  /** The node's number in its owner (the simulator's slot); 0 for the agent. */
  final int slot;
  private final NdjsonLines lines = new NdjsonLines(NdjsonLines.DEFAULT_MAX_LINE);
  private final WatchBackoff backoff = new WatchBackoff(WatchBackoff.BASE_MS, WatchBackoff.CAP_MS, RANDOM);

  private State state = State.IDLE;
  private int target = -1;
  /** Coordinators skipped past the session's after failures at them (a down replica). */
  private int offset;
  private HttpClientRequest request;
  /** Counts attempts, so that the handlers of an abandoned one do nothing. */
  private int attempt;
  private long timer = -1;
  private long lastHeardMs;
  private long openedAtMs;
  private boolean first;
  private String closeReason;
  private long closeRetryAfterMs;
  private long lastHintMoveMs;
  /** A stream ended or an attempt failed since the last open: the next open settles before a hint moves it. */
  private boolean afterLoss;
  /** A hint's move of a stable stream is due at this time (0: none pending). */
  private long moveDueMs;
  /** No owner hint moves the open stream before this time (0: at once). */
  private long settleUntilMs;
  /** The coordinator whose stream was cut without a close line: the next attempt goes to another one (-1: none). */
  private int avoid = -1;
  /** Connections refused in a row, each at the next coordinator (at most one round at the short wait). */
  private int refusedInARow;
  private boolean closed;

  NodeWatch(Vertx vertx, WatchTransport transport, Coordinators coordinators, AgentSession session, Host host, int slot) {
    this.vertx = vertx;
    this.transport = transport;
    this.coordinators = coordinators;
    this.session = session;
    this.host = host;
    this.slot = slot;
  }

  State state() {
    return state;
  }

  AgentSession session() {
    return session;
  }

  /** The coordinator URL of the stream (open or being opened), or null. */
  String url() {
    return target < 0 || state == State.IDLE || state == State.STOPPED ? null : coordinators.target(target).url();
  }

  /** Opens the stream now (the node must be enrolled). */
  void start() {
    if (closed || state == State.STOPPED || !session.isEnrolled()) return;
    cancelTimer();
    connect();
  }

  /** Ends the stream for good (the owner stops). */
  void close() {
    closed = true;
    cancelTimer();
    abandon();
    state = State.STOPPED;
  }

  /** The liveness check: a stream (or an attempt) silent for {@link #SILENCE_MS} is closed and re-opened. */
  void tick(long nowMs) {
    if (moveDueMs > 0 && (state != State.OPEN || target == session.coordinator())) moveDueMs = 0; // moved, or the hint came back
    if (moveDueMs > 0 && nowMs >= moveDueMs) hint(coordinators.target(session.coordinator()).url());
    if (nowMs - lastHeardMs <= SILENCE_MS) return;
    String url = url();
    if (state == State.OPEN) {
      long openFor = nowMs - openedAtMs;
      abandon();
      retry(url, "silent", openFor, 0, false);
    } else if (state == State.CONNECTING) {
      abandon();
      failed(url, new Reply(0, null, "timeout", "no answer within " + SILENCE_MS / 1000 + " s", 0, 0));
    }
  }

  /**
   * An owner hint ({@code "coordinator"} in a heartbeat or stream answer): when it names a configured
   * coordinator other than the one in use, the session's requests go there, and the stream moves there
   * (at most once per {@link #HINT_MOVE_MS}).
   */
  void hint(Object value) {
    if (!(value instanceof String url)) return;
    int index = coordinators.indexOf(url);
    if (index < 0 || index == session.coordinator() && (target < 0 || index == target)) return;
    String from = coordinators.target(session.coordinator()).url();
    if (index != session.coordinator()) {
      session.pacing().useCoordinator(index);
      host.coordinatorMoved(this, from, coordinators.target(index).url());
    }
    offset = 0;
    long now = System.currentTimeMillis();
    boolean settled = state == State.OPEN ? now >= settleUntilMs : state == State.CONNECTING && !afterLoss;
    if (settled && state == State.OPEN && target != index && now - openedAtMs >= WatchBackoff.HEALTHY_MS) {
      // a stream that has been where it is for a while hears of a new owner: a member joined or left and the partitions
      // moved, for thousands of streams at once; each moves at its own random point of the next minute (tick)
      if (moveDueMs == 0) moveDueMs = now + 1 + (long) (STABLE_SPREAD_MS * RANDOM.getAsDouble());
      if (now < moveDueMs) return;
    }
    if (settled && target != index && now - lastHintMoveMs >= HINT_MOVE_MS) {
      moveDueMs = 0;
      lastHintMoveMs = now;
      String url0 = url();
      boolean wasOpen = state == State.OPEN;
      abandon();
      if (wasOpen) host.streamEnded(this, url0, "moved", now - openedAtMs, 0);
      connect();
    }
  }

  /**
   * An owner hint without a stream ({@code --no-watch}, a simulator without {@code --watch}): the
   * session's requests go to the coordinator it names when that is a configured one.
   *
   * @return true when the session moved
   */
  static boolean follow(Coordinators coordinators, AgentSession session, Object value) {
    if (!(value instanceof String url)) return false;
    int index = coordinators.indexOf(url);
    if (index < 0 || index == session.coordinator()) return false;
    session.pacing().useCoordinator(index);
    return true;
  }

  // ---- one attempt ----

  private void connect() {
    if (closed) return;
    int n = coordinators.size();
    target = Math.floorMod(session.coordinator() + offset, n);
    if (avoid >= 0 && n > 1) {
      // the stream was cut (a replica died): any other coordinator, drawn at random, so that the dead replica's agents spread
      // over every survivor instead of all landing on the next one in their lists (the drill's survivors: 8,775 against 3,741)
      target = Math.floorMod(avoid + 1 + (int) (RANDOM.getAsDouble() * (n - 1)), n);
    }
    avoid = -1;
    int mine = ++attempt;
    state = State.CONNECTING;
    lastHeardMs = System.currentTimeMillis();
    closeReason = null;
    closeRetryAfterMs = 0;
    lines.reset();
    String url = coordinators.target(target).url();
    host.streamConnecting(this, url);
    transport.open(slot, target, session.watchPath(), session.authorization()).onComplete(ar -> {
      if (mine != attempt) {
        if (ar.succeeded()) ar.result().exceptionHandler(ignored -> {}).reset(); // no ERROR logged for a reset of ours
        return;
      }
      if (ar.failed()) {
        failed(url, Reply.failure(ar.cause()));
        return;
      }
      request = ar.result();
      // failures reach send()'s future and the response's handlers; without a handler here, Vert.x logs an ERROR for every
      // stream reset, our own included (an owner hint's move: hundreds at once after a fleet enrolls)
      request.exceptionHandler(ignored -> {});
      request.send().onComplete(rr -> {
        if (mine != attempt) return;
        if (rr.failed()) {
          request = null;
          failed(url, Reply.failure(rr.cause()));
        } else {
          answered(mine, url, rr.result());
        }
      });
    });
  }

  private void answered(int mine, String url, HttpClientResponse resp) {
    String type = resp.getHeader(HttpHeaders.CONTENT_TYPE);
    if (resp.statusCode() != 200 || type == null || !type.startsWith("application/x-ndjson")) {
      resp.body().onComplete(b -> {
        if (mine != attempt) return;
        Reply r = b.succeeded() ? Coordinators.reply(resp, b.result()) : Reply.failure(b.cause());
        abandon();
        if (r.status() == 200) r = new Reply(200, null, "not_a_stream", "Content-Type " + type, 0, r.bytesIn());
        failed(url, r);
      });
      return;
    }
    state = State.OPEN;
    long now = System.currentTimeMillis();
    openedAtMs = now;
    lastHeardMs = now;
    first = true;
    offset = 0;
    refusedInARow = 0;
    moveDueMs = 0;
    settleUntilMs = afterLoss ? now + SETTLE_MIN_MS + (long) (SETTLE_SPREAD_MS * RANDOM.getAsDouble()) : 0;
    afterLoss = false;
    host.streamOpened(this, url);
    resp.handler(chunk -> {
      if (mine != attempt) return;
      lastHeardMs = System.currentTimeMillis();
      host.streamBytes(this, chunk.length());
      if (!lines.feed(chunk, line -> line(mine, line))) {
        if (mine == attempt) end(url, "protocol");
      }
    });
    // the stream is over when these run: it is not reset (on HTTP/2, a reset written while the connection fails makes
    // Netty fail the connection again, which calls the next stream's handler from inside this one: with hundreds of
    // streams on the connection of a replica that died, a StackOverflowError cut the chain, and the streams whose
    // handlers never ran stayed OPEN to nobody until an owner hint or the 45 s silence check moved them)
    resp.exceptionHandler(e -> {
      if (mine != attempt) return;
      request = null;
      end(url, closeReason != null ? closeReason : "ended");
    });
    resp.endHandler(v -> {
      if (mine != attempt) return;
      request = null;
      end(url, closeReason != null ? closeReason : "ended");
    });
  }

  /** No stream: the wait before the next attempt, or none (credential refused). */
  private void failed(String url, Reply r) {
    int s = r.status();
    if (s == 401 || s == 403) {
      host.streamRefused(this, url, r, -1);
      stop(r.describe());
      return;
    }
    afterLoss = true;
    boolean elsewhere = r.coordinatorsFault() && coordinators.size() > 1;
    // another coordinator, at random among the others (a dead replica's agents spread over the survivors)
    if (elsewhere) offset += 1 + (int) (RANDOM.getAsDouble() * (coordinators.size() - 1));
    boolean noRoute = s == 404 || "not_a_stream".equals(r.error()) || (s >= 400 && s < 500 && s != 409 && s != 429);
    long wait = backoff.next(0, r.retryAfterMs(), noRoute);
    // a refused connection (a replica that died, its port closed): the next coordinator at once, one round of them
    refusedInARow = "connect".equals(r.error()) ? refusedInARow + 1 : 0;
    if (elsewhere && refusedInARow > 0 && refusedInARow < coordinators.size()) {
      wait = Math.min(wait, FAILOVER_MIN_MS + (long) (FAILOVER_SPREAD_MS * RANDOM.getAsDouble()));
    }
    host.streamRefused(this, url, r, wait);
    schedule(wait);
  }

  private void line(int mine, Buffer line) {
    if (mine != attempt) return;
    JsonObject m;
    try {
      m = new JsonObject(line);
    } catch (DecodeException | ClassCastException e) {
      end(coordinators.target(target).url(), "protocol");
      return;
    }
    String type = m.getValue("type") instanceof String t ? t : "";
    host.streamMessage(this, type);
    switch (type) {
      case "answer" -> answer(m);
      case "close" -> {
        closeReason = m.getValue("reason") instanceof String r && !r.isEmpty() && r.length() <= 64 ? r : "closed";
        closeRetryAfterMs = m.getValue("retry_after_s") instanceof Number n && n.doubleValue() > 0 ? (long) (n.doubleValue() * 1000) : 0;
        end(coordinators.target(target).url(), closeReason);
      }
      default -> {
        // ping (liveness is any line), or a type this agent does not know: nothing to do
      }
    }
  }

  private void answer(JsonObject a) {
    long aclBefore = session.aclVersion();
    int received;
    try {
      received = session.apply(a);
    } catch (RuntimeException e) {
      received = 0; // what could be applied was; the next answer or heartbeat brings the rest
    }
    boolean commands = session.pacing().takeResultsWaiting();
    String kind = kind(a, commands);
    long delay = -1;
    if (!first && a.getValue("committed_at") instanceof String at) {
      try {
        delay = Math.max(0, System.currentTimeMillis() - Instant.parse(at).toEpochMilli());
      } catch (DateTimeParseException unreadable) {
        delay = -1;
      }
    }
    first = false;
    host.streamAnswer(this, a, kind, delay, aclBefore, received);
    // an ingress node that applied new routes says so at once (its ingress_sync turns current), not at its next heartbeat
    boolean routes = session.takeRoutesToReport();
    if (commands) host.beatNow(this);
    else if (routes) host.beatSoon(this);
    hint(a.getValue("coordinator"));
  }

  /** What an answer line brought, the first that applies: new rules, peers, a new command, else other. */
  static String kind(JsonObject a, boolean newCommand) {
    if (a.getValue("acl") instanceof JsonObject acl && acl.getValue("rules") instanceof JsonArray) return KIND_ACL;
    if (a.getValue("peers") instanceof JsonObject p
        && (p.getValue("items") instanceof JsonArray || p.getValue("changed") instanceof JsonArray || p.getValue("removed") instanceof JsonArray)) {
      return KIND_PEERS;
    }
    return newCommand ? KIND_COMMANDS : KIND_OTHER;
  }

  // ---- endings ----

  private void end(String url, String reason) {
    long openFor = System.currentTimeMillis() - openedAtMs;
    long retryAfter = closeRetryAfterMs;
    abandon();
    switch (reason) {
      case "token_revoked", "token_expired", "node_deleted" -> {
        host.streamEnded(this, url, reason, openFor, -1);
        stop("the stream was closed: " + reason);
      }
      default -> retry(url, reason, openFor, retryAfter, false);
    }
  }

  private void retry(String url, String reason, long openForMs, long retryAfterMs, boolean noRoute) {
    afterLoss = true;
    // a stream cut without a close line (the replica died, or the network between): the next attempt starts at the next
    // coordinator; a replica that is only restarting or draining sends a close line and is asked again first
    if ("ended".equals(reason) || "silent".equals(reason)) avoid = target;
    long wait = backoff.next(openForMs, retryAfterMs, noRoute);
    host.streamEnded(this, url, reason, openForMs, wait);
    schedule(wait);
  }

  private void stop(String why) {
    state = State.STOPPED;
    host.streamStopped(this, why);
  }

  /** Forgets the attempt under way: its handlers do nothing from now on, its request is reset. */
  private void abandon() {
    attempt++;
    HttpClientRequest r = request;
    request = null;
    if (r != null) r.reset();
    lines.reset();
    if (state != State.STOPPED) state = State.IDLE;
  }

  private void schedule(long waitMs) {
    if (closed) return;
    state = State.WAITING;
    cancelTimer();
    timer = vertx.setTimer(Math.max(1, waitMs), id -> {
      timer = -1;
      if (state == State.WAITING) connect();
    });
  }

  private void cancelTimer() {
    if (timer >= 0) vertx.cancelTimer(timer);
    timer = -1;
  }
}
