package io.meshplane.agent;

import io.vertx.core.json.JsonObject;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The simulator's peer check under {@code --certificates} (issue 28's rotation drill): samples of pairs
 * of a shard's nodes, A and B, and whether A's certificate and chain verify under B's trust bundle at
 * B's clock, as B's mesh TLS would ({@link AgentPki#verify}). Each simulated node's clock is skewed by a
 * fixed amount within ±{@link #SKEW_MS} (drawn from its number; its {@link AgentPki} runs on it, for its
 * renewals too), so a certificate that is only valid on a clock that is right fails here. On the shard's event loop: a few pairs per round (a path validation
 * each, well under a millisecond), whatever the fleet's size.
 */
final class SimPairs {
  /** The most a simulated node's clock is off, either way. */
  static final long SKEW_MS = 5 * 60_000;

  private SimPairs() {}

  /** The fixed clock skew of node {@code node}: spread over [-SKEW_MS, +SKEW_MS]. */
  static long skewMs(int node) {
    long h = (node + 1) * 0x9E3779B97F4A7C15L;
    h ^= h >>> 31;
    return Math.floorMod(h, 2 * SKEW_MS + 1) - SKEW_MS;
  }

  /** A node's presence ({@link SimShard}'s control of {@code --control}): online all along, offline, back but not yet current, back and current. */
  static final byte ONLINE = 0;
  static final byte OFFLINE = 1;
  static final byte RETURNED = 2;
  static final byte RECOVERED = 3;

  /**
   * Checks up to {@code pairs} random pairs among {@code sessions} (slot k holds node {@code k * shards + index}),
   * counting them in {@code stats}; a pair is skipped when A holds no certificate or B no bundle, and when either is
   * offline or back but not yet current ({@code presence}, null: every node online). A pair with a node back and
   * current counts apart ({@link SimStats#returnedPairsChecked}). B verifies at its own clock: its {@link AgentPki}
   * adds the skew it runs at, {@code skewOf(slot)} the rest of the node's skew (all of it when its AgentPki runs unskewed).
   */
  static void sample(AgentSession[] sessions, byte[] presence, java.util.function.IntToLongFunction skewOf, int pairs, SimStats stats, long nowMs) {
    if (sessions.length < 2) return;
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    for (int i = 0; i < pairs; i++) {
      int a = rnd.nextInt(sessions.length);
      int b = rnd.nextInt(sessions.length);
      if (a == b || sessions[a] == null || sessions[b] == null || sessions[a].pki() == null || sessions[b].pki() == null) continue;
      byte pa = presence == null ? ONLINE : presence[a];
      byte pb = presence == null ? ONLINE : presence[b];
      if (pa == OFFLINE || pb == OFFLINE || pa == RETURNED || pb == RETURNED) continue;
      String why = check(sessions[a].pki(), sessions[b].pki(), nowMs + skewOf.applyAsLong(b));
      if (SKIPPED.equals(why)) continue;
      boolean returned = pa == RECOVERED || pb == RECOVERED;
      (returned ? stats.returnedPairsChecked : stats.pairsChecked).increment();
      if (why != null) {
        (returned ? stats.returnedPairsFailed : stats.pairsFailed).increment();
        stats.lastPairFailure = why;
      }
    }
  }

  /** Returned by {@link #check} when A holds no certificate or B no bundle. */
  static final String SKIPPED = "skipped";

  /** Whether A's certificate and chain verify under B's bundle at B's clock: null when they do, else why not (or {@link #SKIPPED}). */
  static String check(AgentPki a, AgentPki b, long nowMs) {
    if (a.expiresInSeconds(nowMs) == null || b.bundleVersionHeld().isEmpty()) return SKIPPED;
    JsonObject held = a.toJson();
    List<X509Certificate> leaf = AgentPki.certificates(held.getString("certificate"));
    List<X509Certificate> chain = AgentPki.certificates(held.getString("chain"));
    return leaf.size() != 1 ? "A's certificate does not parse" : b.verify(leaf.get(0), chain, nowMs);
  }
}
