package io.meshplane.agent;

import io.vertx.core.json.JsonObject;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The simulator's peer check under {@code --certificates} (issue 28's rotation drill): samples of pairs
 * of a shard's nodes, A and B, and whether A's certificate and chain verify under B's trust bundle at
 * B's clock, as B's mesh TLS would ({@link AgentPki#verify}). Each simulated node's clock is skewed by a
 * fixed amount within ±{@link #SKEW_MS} (drawn from its number), so a certificate that is only valid on
 * a clock that is right fails here. On the shard's event loop: a few pairs per round (a path validation
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

  /**
   * Checks up to {@code pairs} random pairs among {@code sessions} (slot k holds node {@code k * shards + index}),
   * counting them in {@code stats}; a pair is skipped when A holds no certificate or B no bundle.
   */
  static void sample(AgentSession[] sessions, int shards, int index, int pairs, SimStats stats, long nowMs) {
    if (sessions.length < 2) return;
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    for (int i = 0; i < pairs; i++) {
      int a = rnd.nextInt(sessions.length);
      int b = rnd.nextInt(sessions.length);
      if (a == b || sessions[a] == null || sessions[b] == null || sessions[a].pki() == null || sessions[b].pki() == null) continue;
      AgentPki pa = sessions[a].pki();
      AgentPki pb = sessions[b].pki();
      if (pa.expiresInSeconds(nowMs) == null || pb.bundleVersionHeld().isEmpty()) continue;
      JsonObject held = pa.toJson();
      List<X509Certificate> leaf = AgentPki.certificates(held.getString("certificate"));
      List<X509Certificate> chain = AgentPki.certificates(held.getString("chain"));
      String why = leaf.size() != 1 ? "A's certificate does not parse" : pb.verify(leaf.get(0), chain, nowMs + skewMs(b * shards + index));
      stats.pairsChecked.increment();
      if (why != null) {
        stats.pairsFailed.increment();
        stats.lastPairFailure = why;
      }
    }
  }
}
