package io.meshplane.watch;

import io.meshplane.changes.ChangeLog;
import io.meshplane.common.Times;
import io.meshplane.node.NodePki;
import io.meshplane.node.NodePolicy;
import io.meshplane.node.NodeWork;
import io.meshplane.node.OwnerHint;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.sqlclient.SqlClient;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the streams are sent, decided on one thread of its own (never an event loop): a follower of
 * the change log (registered after the peer model and the operations board, so it sees an entry once
 * they have applied it) that marks what changed, then a pass that compares each concerned stream with
 * its node's current versions and work, builds the answers that are due (parts shared by the nodes of
 * a class within the pass: {@link NodePolicy#streamParts}) and hands them to the streams' event loops
 * in slices, so that heartbeats interleave with the writes. Also the 15 s pings and the 1 s sweep of
 * expired tokens.
 */
final class WatchDispatch implements ChangeLog.Follower {
  private static final Logger LOG = LoggerFactory.getLogger(WatchDispatch.class);
  /** Writes per event-loop task: heartbeats of that loop wait for one slice at most. */
  static final int SLICE = 256;
  /** The longest a slice of writes holds its event loop. */
  static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
  /** How often the streams are looked over for pings. */
  static final long PING_PASS_MS = 1000;
  static final int MIN_PINGS_PER_PASS = 1000;
  /**
   * The least time between two passes over every stream: a pass compares each stream of the replica
   * (about 20-30 ms of this thread at 100,000 streams), so under a steady churn of changes (an
   * enrollment wave) at most a tenth of a core goes to it, for at most this much more delay.
   */
  static final long FULL_PASS_GAP_MS = 250;

  private record Out(WatchStream stream, Buffer line, long committedAt, boolean answer) {}

  private final WatchHub hub;
  private final NodePolicy policy;
  private final NodeWork work;
  private final NodePki pki;
  private final io.meshplane.node.NodeIngress ingress;
  private final OwnerHint hint;
  private final WatchMetrics metrics;
  private final WatchModule.Settings settings;
  private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "meshplane-watch");
    t.setDaemon(true);
    return t;
  });
  private final ConcurrentLinkedQueue<WatchStream> due = new ConcurrentLinkedQueue<>();
  /** Streams whose node's own answer changed without a version (a relay move): answered even when their versions are current. */
  private final ConcurrentLinkedQueue<WatchStream> forced = new ConcurrentLinkedQueue<>();
  /** When the last pass over every stream started (the dispatch thread's). */
  private long lastFull;
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private volatile boolean everything;
  private volatile long seq;
  private volatile long committedAt;

  WatchDispatch(WatchHub hub, NodePolicy policy, NodeWork work, NodePki pki, io.meshplane.node.NodeIngress ingress, OwnerHint hint,
      WatchMetrics metrics, WatchModule.Settings settings) {
    this.hub = hub;
    this.ingress = ingress;
    this.pki = pki;
    this.policy = policy;
    this.work = work;
    this.hint = hint;
    this.metrics = metrics;
    this.settings = settings;
  }

  void start() {
    long ping = settings.ping().toMillis();
    thread.scheduleWithFixedDelay(guarded(this::pings), ping, PING_PASS_MS, TimeUnit.MILLISECONDS);
    thread.scheduleWithFixedDelay(guarded(() -> hub.sweep(System.currentTimeMillis())), 1, 1, TimeUnit.SECONDS);
  }

  void stop() {
    thread.shutdownNow();
  }

  private Runnable guarded(Runnable r) {
    return () -> {
      try {
        r.run();
      } catch (RuntimeException e) {
        LOG.warn("watch dispatch: {}", e.toString(), e);
      }
    };
  }

  /** A stream opened: its first answer is due. */
  void opened(WatchStream s) {
    due.add(s);
    kick();
  }

  // ---- the change log ----

  @Override
  public boolean apply(ChangeLog.Entry e) {
    seq = e.seq();
    if (e.atMillis() > 0) committedAt = e.atMillis();
    switch (e.kind()) {
      case "work" -> {
        WatchStream[] of = hub.ofNode(e.data().getString("node"));
        if (of == null) return false;
        for (WatchStream s : of) due.add(s);
      }
      case "relay" -> {
        // the node's own relay is in its answer without a version: its streams are answered whatever their versions
        WatchStream[] of = hub.ofNode(e.data().getString("id"));
        if (of != null) for (WatchStream s : of) forced.add(s);
        everything = true;
      }
      case "delete" -> {
        hub.closeNode(e.data().getString("id"), "node_deleted");
        everything = true;
      }
      // pki: a revocation, or a new state of the CA hierarchy (a rotation's bundle): MeshCA applied it before this follower
      // ingress: a team+environment's routes (the ingress feature applied it before this follower)
      // waf: a team+environment's traffic policy, sent inside the ingress routes block (the ingress feature applied it too)
      case "enroll", "retag", "policy", "live", "online", "pki", "ingress", "waf" -> everything = true;
      default -> {
        return false;
      }
    }
    kick();
    return false; // the peer model and the board use these entries; the watch only listens
  }

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    this.seq = seq;
    this.committedAt = System.currentTimeMillis();
    everything = true;
    kick();
    return Future.succeededFuture();
  }

  private void kick() {
    if (scheduled.compareAndSet(false, true)) thread.execute(guarded(this::pass));
  }

  // ---- the pass ----

  private void pass() {
    scheduled.set(false);
    long now = System.currentTimeMillis();
    boolean full = everything && now - lastFull >= FULL_PASS_GAP_MS;
    long at = committedAt == 0 ? now : committedAt;
    Buffer head = Buffer.buffer(160).appendString("{\"type\":\"answer\",\"seq\":").appendString(Long.toString(seq))
        .appendString(",\"committed_at\":\"").appendString(Times.formatMillis(at)).appendString("\",\"server_time\":\"")
        .appendString(Times.formatMillis(now)).appendString("\",\"interval_s\":").appendString(Long.toString(settings.intervalSeconds()))
        .appendString(",");
    Map<Object, Object> shared = new HashMap<>();
    Map<Context, List<Out>> out = new HashMap<>();
    int checked = 0;
    for (WatchStream s; (s = forced.poll()) != null; ) {
      check(s, true, head, at, shared, out);
      checked++;
    }
    if (full) {
      everything = false;
      lastFull = now;
      for (WatchStream s : hub.all.values()) {
        check(s, false, head, at, shared, out);
        checked++;
      }
    }
    for (WatchStream s; (s = due.poll()) != null; ) {
      check(s, false, head, at, shared, out);
      checked++;
    }
    metrics.passes.increment();
    metrics.checked.increment(checked);
    metrics.shared.increment(shared.size());
    out.forEach((context, lines) -> deliver(context, lines));
    if (everything && !full && scheduled.compareAndSet(false, true)) {
      // too soon after the last pass over every stream: once the gap has passed
      thread.schedule(guarded(this::pass), Math.max(1, lastFull + FULL_PASS_GAP_MS - now), TimeUnit.MILLISECONDS);
    }
  }

  private void check(WatchStream s, boolean force, Buffer head, long at, Map<Object, Object> shared, Map<Context, List<Out>> out) {
    if (s.ended) return;
    long[] v = policy.versions(s.nodeId);
    Object w = work.state(s.nodeId);
    boolean first = !s.started;
    boolean pkiDue = s.pki && !pki.current(s.pkiBundle, s.pkiRevocations);
    boolean ingressDue = ingress.due(s.nodeId, s.ingress);
    if (!first && !force && !pkiDue && !ingressDue && w == s.work && (v == null || (v[0] <= s.peers && v[1] <= s.acl))) return;
    List<ByteBuf> parts = new ArrayList<>(8);
    parts.add(byteBuf(head));
    Buffer coordinator = Buffer.buffer(64);
    hint.append(s.nodeId, coordinator);
    if (coordinator.length() > 0) parts.add(byteBuf(coordinator));
    List<Buffer> policyParts = new ArrayList<>(4);
    long[] sent = policy.streamParts(s.nodeId, s.peers, s.acl, shared, policyParts);
    for (Buffer b : policyParts) parts.add(byteBuf(b));
    if (s.pki) {
      // the bundle and the revocations when they moved: the same bytes for every stream at the same versions
      List<Buffer> pkiParts = new ArrayList<>(5);
      Object[] held = pki.streamParts(s.pkiBundle, s.pkiRevocations, pkiParts);
      for (Buffer b : pkiParts) parts.add(byteBuf(b));
      if (held != null) {
        s.pkiBundle = (String) held[0];
        s.pkiRevocations = (Long) held[1];
      }
    }
    // the ingress routes the node serves: in full when they moved, unchanged otherwise, nothing for a node without any
    Buffer routes = Buffer.buffer(64);
    s.ingress = ingress.streamPart(s.nodeId, s.ingress, routes);
    if (routes.length() > 0) parts.add(byteBuf(routes));
    Buffer tail = Buffer.buffer(96);
    work.answer(s.nodeId, tail);
    tail.appendString("\n");
    parts.add(byteBuf(tail));
    s.work = w;
    s.started = true;
    if (sent != null) {
      s.peers = Math.max(s.peers, sent[0]);
      s.acl = Math.max(s.acl, sent[1]);
    }
    Buffer line = BufferInternal.buffer(Unpooled.wrappedUnmodifiableBuffer(parts.toArray(new ByteBuf[0])));
    out.computeIfAbsent(s.context, k -> new ArrayList<>()).add(new Out(s, line, first ? 0 : at, true));
  }

  private static ByteBuf byteBuf(Buffer b) {
    return ((BufferInternal) b).getByteBuf();
  }

  /** Writes {@code lines} on their event loop in slices ({@link LoopSlices}): heartbeats of that loop wait for one slice at most. */
  private void deliver(Context context, List<Out> lines) {
    LoopSlices.run(context, lines, SLICE, SLICE_NANOS, o -> {
      if (o.stream().ended) return;
      if (!o.stream().write(o.line(), settings.maxBufferBytes())) {
        hub.close(o.stream(), "slow_reader");
        return;
      }
      metrics.bytes.increment(o.line().length());
      if (o.answer()) {
        metrics.answers.increment();
        if (o.committedAt() > 0) metrics.delay.record(Math.max(0, System.currentTimeMillis() - o.committedAt()), TimeUnit.MILLISECONDS);
      } else {
        metrics.pings.increment();
      }
    });
  }

  /**
   * The most pings one pass writes: twice the steady rate (every stream once per ping interval), at
   * least {@link #MIN_PINGS_PER_PASS}. Streams that one change reached all at once (a whole-fleet policy
   * change) fall silent together; without a cap their 100,000 pings went out in one pass 15 s later
   * and held heartbeats for a second (the 100,000-agent soak); with it they go out over the next
   * seconds, the ones left over first in the next pass.
   */
  static int pingsPerPass(int streams, long pingMillis) {
    return (int) Math.max(MIN_PINGS_PER_PASS, Math.min(Integer.MAX_VALUE, 2L * streams * PING_PASS_MS / Math.max(1, pingMillis)));
  }

  /** A ping on every stream that has carried nothing for the ping interval (its versions, so an idle agent can check itself). */
  private void pings() {
    long now = System.currentTimeMillis();
    long quiet = settings.ping().toMillis();
    String time = Times.formatMillis(now);
    Map<Context, List<Out>> out = new HashMap<>();
    int budget = pingsPerPass(hub.size(), quiet);
    for (WatchStream s : hub.all.values()) {
      if (s.ended || !s.started || now - s.lastWriteMillis < quiet - 500) continue;
      if (budget-- == 0) break;
      Buffer line = Buffer.buffer(128).appendString("{\"type\":\"ping\",\"seq\":").appendString(Long.toString(seq))
          .appendString(",\"server_time\":\"").appendString(time).appendString("\",\"peers\":").appendString(Long.toString(Math.max(0, s.peers)))
          .appendString(",\"acl\":").appendString(Long.toString(Math.max(0, s.acl))).appendString("}\n");
      out.computeIfAbsent(s.context, k -> new ArrayList<>()).add(new Out(s, line, 0, false));
    }
    out.forEach((context, lines) -> deliver(context, lines));
  }
}
