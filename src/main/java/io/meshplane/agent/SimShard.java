package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The simulated nodes of one event loop ({@code meshplane simulate}): node {@code n} belongs to shard
 * {@code n % shards}. Each node starts on coordinator URL {@code n % URLs}, enrolls, beats on a plain
 * timer and, with {@code --watch}, holds a watch stream ({@link NodeWatch}) from its first accepted
 * heartbeat on. A command that arrives on a stream makes the node beat at once (its result goes in that
 * heartbeat). No thread per node, no object per node besides its session and its stream. With {@code
 * --final-check}, each node's check heartbeat ({@link #finalCheck}).
 */
final class SimShard extends VerticleBase implements AgentSession.Events, NodeWatch.Host {
  private final Simulator sim;
  private final Simulator.Settings settings;
  private final SimStats stats;
  private final int index;
  private final int shards;
  private final Coordinators coordinators;
  /** The watch streams' clients, or null without {@code --watch}. */
  private final WatchTransport transport;
  private final long intervalMs;
  private final int enrollSlots;
  private final AgentSession[] sessions;
  /** Per slot, the policy change whose new rules the node was last counted for (--policy-churn). */
  private final int[] rulesCounted;
  /** Per slot: the node's stream (with --watch, from its first accepted heartbeat). */
  private final NodeWatch[] watches;
  /** Per slot: the heartbeat timer, whether a heartbeat is on its way, whether another must follow it at once. */
  private final long[] timers;
  private final boolean[] inFlight;
  private final boolean[] again;
  /** Per slot, with --watch: when the node's open stream was lost (ms), 0 while it is open or was never lost. */
  private final long[] lostAtMs;
  /** Per slot, its presence under --control ({@link SimPairs#ONLINE} …), and when it was brought back (ms). */
  private final byte[] presence;
  private final long[] returnedAtMs;
  /** Nodes of this shard back but not yet current, and what current is: the bundle and issuer most of its online nodes hold. */
  private int pending;
  private String currentBundle;
  private String currentIssuer;
  private final StringBuilder body = new StringBuilder(512);
  private final NodeKey.Source keys = NodeKey.randomPublic(ThreadLocalRandom.current().nextLong());
  private final Backoff backoff = Backoff.standard();
  private final String enrollAuthorization;
  private int nextToEnroll;

  SimShard(Simulator sim, int index, int shards, Coordinators coordinators, WatchTransport transport, long intervalMs, int enrollSlots) {
    this.sim = sim;
    this.settings = sim.settings();
    this.stats = sim.stats();
    this.index = index;
    this.shards = shards;
    this.coordinators = coordinators;
    this.transport = transport;
    this.intervalMs = intervalMs;
    this.enrollSlots = enrollSlots;
    int count = settings.nodes() / shards + (index < settings.nodes() % shards ? 1 : 0);
    this.sessions = new AgentSession[count];
    this.rulesCounted = new int[count];
    this.watches = transport == null ? null : new NodeWatch[count];
    this.timers = new long[count];
    java.util.Arrays.fill(timers, -1); // Vert.x timer ids start at 0
    this.inFlight = new boolean[count];
    this.again = new boolean[count];
    this.lostAtMs = transport == null ? null : new long[count];
    this.presence = new byte[count];
    this.returnedAtMs = new long[count];
    this.enrollAuthorization = "Bearer " + settings.enrollToken();
  }

  @Override
  public Future<?> start() {
    for (int i = 0; i < enrollSlots; i++) enrollNext();
    if (settings.certificates()) vertx.setPeriodic(EXPIRED_SCAN_MS, id -> countExpired());
    if (watches != null) {
      vertx.setPeriodic(AgentWatch.TICK_MS, id -> {
        long now = System.currentTimeMillis();
        for (NodeWatch w : watches) {
          if (w != null) w.tick(now);
        }
      });
    }
    return Future.succeededFuture();
  }

  private void enrollNext() {
    if (sim.stopping() || nextToEnroll >= sessions.length) return;
    int slot = nextToEnroll++;
    sessions[slot] = new AgentSession(sim.nodeName(node(slot)), keys.generate(), keys, true, this, System.currentTimeMillis());
    if (settings.ingressTag() != null && sim.nodeTags(node(slot)).contains(settings.ingressTag())) sessions[slot].useEdge(new SimEdge(stats));
    // the fleet starts spread over every --coordinator (node n on URL n mod count); failover and owner hints move it from there
    sessions[slot].pacing().useCoordinator(node(slot) % coordinators.size());
    if (!settings.certificates()) {
      enroll(slot);
      return;
    }
    // the node's own P-256 key and its CSR (a key generation and a signature: ~0.3 ms of CPU each node, 30 s for 100,000) on
    // the worker pool, never on this event loop; the session gets them before its first heartbeat
    long skew = settings.skewClocks() ? SimPairs.skewMs(node(slot)) : 0;
    vertx.executeBlocking(() -> newPki(skew), false).onComplete(ar -> {
      if (ar.failed()) {
        sim.abort("could not make a node key and CSR: " + ar.cause().getMessage());
        return;
      }
      sessions[slot].usePki(ar.result());
      enroll(slot);
    });
  }

  /**
   * How often each shard counts its nodes holding an expired certificate (a comparison per node: 100,000 take well under a ms)
   * and checks a sample of pairs.
   */
  private static final long EXPIRED_SCAN_MS = 2_000;
  /** Pairs of this shard's nodes checked per scan ({@link SimPairs}). */
  private static final int PAIRS_PER_SCAN = 16;

  private void countExpired() {
    long now = System.currentTimeMillis();
    int expired = 0;
    java.util.Map<String, int[]> held = pending > 0 ? new java.util.HashMap<>() : null;
    for (int slot = 0; slot < sessions.length; slot++) {
      AgentSession s = sessions[slot];
      Long left = s == null || s.pki() == null ? null : s.pki().expiresInSeconds(now); // each node at its own clock
      if (left != null && left < 0) expired++;
      if (held != null && left != null && presence[slot] == SimPairs.ONLINE) {
        held.computeIfAbsent(s.pki().bundleVersionHeld() + " " + s.pki().issuer(), k -> new int[1])[0]++;
      }
    }
    stats.expiredNow.put(index, expired);
    if (held != null) {
      held.entrySet().stream().max(java.util.Map.Entry.comparingByValue(java.util.Comparator.comparingInt(c -> c[0]))).ifPresent(e -> {
        currentBundle = e.getKey().substring(0, e.getKey().indexOf(' '));
        currentIssuer = e.getKey().substring(e.getKey().indexOf(' ') + 1);
      });
    }
    // B's clock in the pair checks: its own (--skew-clocks), or its skew added here (the nodes themselves then run on the host's)
    SimPairs.sample(sessions, presence, slot -> settings.skewClocks() ? 0 : SimPairs.skewMs(node(slot)), PAIRS_PER_SCAN, stats, now);
  }

  // ---- --control: offline and back (on this shard's event loop) ----

  /** Takes this shard's enrolled nodes {@link SimControl#selected} by {@code fraction} offline: no heartbeat, no stream; their state stays. */
  Future<Integer> offline(double fraction) {
    io.vertx.core.Promise<Integer> done = io.vertx.core.Promise.promise();
    context.runOnContext(v -> {
      int n = 0;
      for (int slot = 0; slot < sessions.length; slot++) {
        if (sessions[slot] == null || !sessions[slot].isEnrolled() || presence[slot] == SimPairs.OFFLINE || !SimControl.selected(node(slot), fraction)) continue;
        if (presence[slot] == SimPairs.RETURNED) pending--;
        presence[slot] = SimPairs.OFFLINE;
        if (timers[slot] >= 0) vertx.cancelTimer(timers[slot]);
        timers[slot] = -1;
        again[slot] = false;
        if (watches != null && watches[slot] != null) {
          if (watches[slot].state() == NodeWatch.State.OPEN) stats.streams.open.decrement();
          watches[slot].close();
          watches[slot] = null; // a new stream from its first heartbeat back
        }
        n++;
      }
      stats.offlineNow.add(n);
      done.complete(n);
    });
    return done.future();
  }

  /** Brings every offline node of this shard back: its first heartbeat within a second, with what it held when it left. */
  Future<Integer> online() {
    io.vertx.core.Promise<Integer> done = io.vertx.core.Promise.promise();
    context.runOnContext(v -> {
      int n = 0;
      long now = System.currentTimeMillis();
      for (int slot = 0; slot < sessions.length; slot++) {
        if (presence[slot] != SimPairs.OFFLINE) continue;
        presence[slot] = SimPairs.RETURNED;
        returnedAtMs[slot] = now;
        pending++;
        n++;
        if (!inFlight[slot]) schedule(slot, 1 + ThreadLocalRandom.current().nextLong(1000));
      }
      stats.offlineNow.add(-n);
      stats.returned.add(n);
      done.complete(n);
    });
    return done.future();
  }

  /** After an answer to a node back: current once it holds the bundle and issuer most online nodes do, valid at its clock. */
  private void checkReturned(int slot) {
    if (presence[slot] != SimPairs.RETURNED) return;
    AgentPki p = sessions[slot].pki();
    long now = System.currentTimeMillis();
    if (p != null && (currentBundle == null || !currentBundle.equals(p.bundleVersionHeld()) || !currentIssuer.equals(p.issuer())
        || !"valid".equals(p.verdict(now)))) {
      return;
    }
    presence[slot] = SimPairs.RECOVERED;
    pending--;
    stats.recovered.increment();
    stats.recoveryMaxMs.accumulate(now - returnedAtMs[slot]);
  }

  /** A node's PKI state with its key made and its first CSR signed (on a worker thread: the result is handed over, never shared). */
  private static AgentPki newPki(long clockSkewMs) {
    AgentPki p = new AgentPki(clockSkewMs);
    p.csr();
    return p;
  }

  /** The fleet-wide number of the node in {@code slot}. */
  private int node(int slot) {
    return slot * shards + index;
  }

  private void enroll(int slot) {
    if (sim.stopping()) return;
    AgentSession s = sessions[slot];
    Buffer req = s.enrollmentBody(sim.nodeTags(node(slot)));
    stats.enrollAttempts.increment();
    coordinators.post(s.coordinator(), "/nodes", enrollAuthorization, req).onComplete(ar -> {
      Reply r = ar.result();
      stats.bytesOut.add(req.length());
      stats.bytesIn.add(r.bytesIn());
      if (r.status() == 201 && s.enrolled(r.body())) {
        sim.enrolledOne(r.body());
        schedule(slot, Math.max(1, backoff.spreadMs(intervalMs)));
        enrollNext();
      } else if (r.status() == 401 || r.status() == 403) {
        sim.abort("the coordinator refused the enrollment token: " + r.describe());
      } else if (r.outcome() == Reply.Outcome.REJECTED || r.outcome() == Reply.Outcome.OK) {
        stats.enrollFailed.increment();
        stats.error("enroll_" + (r.error() == null ? "invalid_answer" : r.error()));
        sessions[slot] = null;
        enrollNext();
      } else {
        stats.error("enroll_" + r.error());
        long wait = s.afterFailure(r, backoff, coordinators.size(), intervalMs);
        vertx.setTimer(Math.max(1, wait), id -> enroll(slot));
      }
    });
  }

  private void schedule(int slot, long waitMs) {
    if (sim.stopping() || sim.checking() || presence[slot] == SimPairs.OFFLINE) return;
    timers[slot] = vertx.setTimer(Math.max(1, waitMs), id -> {
      timers[slot] = -1;
      beat(slot);
    });
  }

  private void beat(int slot) {
    if (sim.stopping() || sim.checking() || presence[slot] == SimPairs.OFFLINE) return;
    AgentSession s = sessions[slot];
    Buffer req = s.heartbeatBody(body, System.currentTimeMillis());
    long t0 = System.nanoTime();
    inFlight[slot] = true;
    coordinators.post(s.coordinator(), s.heartbeatPath(), s.authorization(), req).onComplete(ar -> {
      inFlight[slot] = false;
      Reply r = ar.result();
      stats.heartbeat(r, System.nanoTime() - t0, req.length());
      long wait;
      if (r.outcome() == Reply.Outcome.OK) {
        try {
          long aclBefore = s.aclVersion();
          long peersBefore = s.peersVersion();
          stats.peersReceived.add(s.apply(r.body()));
          if (aclBefore >= 0 && s.aclVersion() != aclBefore) sim.rulesChanged(rulesCounted, slot);
          if (s.aclVersion() != aclBefore || s.peersVersion() != peersBefore) sim.versionsMoved();
        } catch (RuntimeException e) {
          stats.error("unapplicable_answer");
        }
        s.takeDirty(); // nothing is persisted in a simulation
        wait = s.afterSuccess(backoff, intervalMs);
        if (s.takeRoutesToReport()) wait = 0; // a stand-in ingress node acknowledges new routes at once, as the agent does
        checkReturned(slot);
        if (presence[slot] == SimPairs.OFFLINE) {
          // went offline while this heartbeat was on its way: nothing more from it
        } else if (watches != null) {
          if (watches[slot] == null) {
            watches[slot] = new NodeWatch(vertx, transport, coordinators, s, this, slot);
            watches[slot].start();
          }
          watches[slot].hint(r.body().getValue("coordinator"));
        } else {
          NodeWatch.follow(coordinators, s, r.body().getValue("coordinator"));
        }
        if (again[slot]) {
          // a command arrived on the stream while this heartbeat was on its way: its result goes now
          again[slot] = false;
          s.pacing().takeResultsWaiting();
          wait = 0;
        }
      } else if ("pool_busy".equals(r.error())) {
        // this process's own connection pool is full: the request never left it, so no coordinator
        // failed. The beat is skipped (counted) and the node beats again an interval later: retrying
        // within a second, as after a coordinator's failure, would keep a fleet of 100,000 nodes
        // piling onto the full pool (seen in a re-key wave: a 40 s storm of rejected sends)
        wait = backoff.intervalMs(s.intervalMs(intervalMs));
      } else {
        wait = s.afterFailure(r, backoff, coordinators.size(), intervalMs);
      }
      schedule(slot, wait);
    });
  }

  // ---- --final-check (on this shard's event loop) ----

  /**
   * Sends every enrolled node's check heartbeat ({@link FinalCheck}), at most {@code enrollSlots} in
   * flight; the future completes when every node has its verdict. Regular heartbeats have stopped
   * ({@link Simulator#checking()}).
   */
  Future<Void> finalCheck(FinalCheck check) {
    io.vertx.core.Promise<Void> done = io.vertx.core.Promise.promise();
    context.runOnContext(v -> {
      int[] next = {0};
      int[] running = {0};
      Runnable[] pump = new Runnable[1];
      pump[0] = () -> {
        while (running[0] < enrollSlots && next[0] < sessions.length) {
          int slot = next[0]++;
          AgentSession s = sessions[slot];
          if (s == null || !s.isEnrolled() || presence[slot] == SimPairs.OFFLINE) continue;
          if (watches != null) {
            NodeWatch w = watches[slot];
            boolean open = w != null && w.state() == NodeWatch.State.OPEN;
            check.stream(s.nodeId(), open, w == null || lostAtMs[slot] == 0 ? -1 : System.currentTimeMillis() - lostAtMs[slot]);
          }
          running[0]++;
          checkOne(slot, check, 1, () -> {
            running[0]--;
            pump[0].run();
          });
        }
        if (running[0] == 0 && next[0] >= sessions.length) done.tryComplete();
      };
      pump[0].run();
    });
    return done.future();
  }

  private void checkOne(int slot, FinalCheck check, int attempt, Runnable then) {
    AgentSession s = sessions[slot];
    long peers = s.peersVersion();
    long acl = s.aclVersion();
    Buffer req = s.heartbeatBody(body, System.currentTimeMillis());
    coordinators.post(s.coordinator(), s.heartbeatPath(), s.authorization(), req).onComplete(ar -> {
      Reply r = ar.result();
      if (r.outcome() == Reply.Outcome.OK) {
        check.answered(s.nodeId(), r.body(), peers, acl);
        then.run();
      } else if (attempt < FinalCheck.ATTEMPTS && r.outcome() != Reply.Outcome.REJECTED) {
        long wait = s.afterFailure(r, backoff, coordinators.size(), intervalMs);
        vertx.setTimer(Math.max(1, Math.min(wait, 1000)), id -> checkOne(slot, check, attempt + 1, then));
      } else {
        check.unanswered(s.nodeId(), r);
        then.run();
      }
    });
  }

  @Override
  public void pki(AgentPki.Applied applied) {
    if (applied.adopted()) {
      stats.certificates.increment();
      stats.certificateLastMs.accumulate(System.currentTimeMillis());
    }
    if (applied.deferredS() > 0) stats.certificatesDeferred.increment();
    if (applied.refused() != null) stats.certificatesRefused.increment();
    if (applied.revocations()) {
      stats.revocationUpdates.increment();
      stats.revocationLastMs.accumulate(System.currentTimeMillis());
    }
  }

  @Override
  public void executed(CommandLedger.Result result) {
    stats.command(result);
  }

  // ---- NodeWatch.Host (on this shard's event loop) ----

  @Override
  public void streamConnecting(NodeWatch w, String url) {
    stats.streams.connects.increment();
  }

  @Override
  public void streamOpened(NodeWatch w, String url) {
    stats.streams.opened.increment();
    stats.streams.open.increment();
    if (lostAtMs[w.slot] > 0) {
      stats.streams.reopened(System.currentTimeMillis() - lostAtMs[w.slot]);
      lostAtMs[w.slot] = 0;
    }
  }

  @Override
  public void streamRefused(NodeWatch w, String url, Reply r, long waitMs) {
    stats.streams.refused(r);
    stats.bytesIn.add(r.bytesIn());
  }

  @Override
  public void streamBytes(NodeWatch w, int bytes) {
    stats.bytesIn.add(bytes);
  }

  @Override
  public void streamMessage(NodeWatch w, String type) {
    stats.streams.message(type);
  }

  @Override
  public void streamAnswer(NodeWatch w, JsonObject answer, String kind, long delayMs, long aclBefore, int peersReceived) {
    AgentSession s = w.session();
    stats.peersReceived.add(peersReceived);
    if (aclBefore >= 0 && s.aclVersion() != aclBefore) sim.rulesChanged(rulesCounted, w.slot);
    if (NodeWatch.KIND_ACL.equals(kind) || NodeWatch.KIND_PEERS.equals(kind)) sim.versionsMoved();
    s.takeDirty();
    stats.streams.applied(kind, delayMs);
    checkReturned(w.slot);
  }

  @Override
  public void streamEnded(NodeWatch w, String url, String reason, long openForMs, long waitMs) {
    stats.streams.open.decrement();
    stats.streams.ended(reason);
    // the loss counts from the first ending: attempts refused meanwhile do not restart it
    if (lostAtMs[w.slot] == 0) lostAtMs[w.slot] = System.currentTimeMillis();
  }

  @Override
  public void beatNow(NodeWatch w) {
    int slot = w.slot;
    stats.streams.earlyBeats.increment();
    if (inFlight[slot]) {
      again[slot] = true;
      return;
    }
    if (timers[slot] >= 0) vertx.cancelTimer(timers[slot]);
    timers[slot] = -1;
    w.session().pacing().takeResultsWaiting();
    schedule(slot, 0);
  }
}
