package io.meshplane.auth;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import java.util.Iterator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The verifier's cache of tokens whose signature was checked, sized for fleets: every agent's token
 * is in the cache of every replica it reaches, so a replica behind a round-robin balancer holds one
 * entry per agent of the whole fleet.
 *
 * <p>An entry does not keep the token's text (~450 characters). It keeps the signature's text (86
 * characters for ES256, the part of a JWT that no one can make up) as the key, and a 64-bit
 * fingerprint of the rest (header and payload). A request hits only if both match: a token whose
 * header or payload was altered misses and goes through the full check, which rejects it. The
 * caller's team and environment are shared between entries. Measured: ~0.45 KB per entry
 * instead of ~0.9 KB with the whole text as the key (load-tests/TokenCacheMemory.java, figures in
 * load-tests/RESULTS.md), so the bound of 1,000,000 tokens takes at most about 450 MB of heap.
 *
 * <p>A plain concurrent map, not a cache library: the lookup runs on every request, and per-read
 * bookkeeping (frequency sketch, access order, expiry wheel) measured at ~4 % of the heartbeat path.
 * Expiry is checked on every request by the verifier; the bound is kept by {@link #put}.
 */
final class VerifiedTokens {
  private record Cached(Caller caller, long rest) {}

  private final ConcurrentHashMap<Signature, Cached> map = new ConcurrentHashMap<>();
  /** Team and environment values shared by every entry that names them (bounded by what was issued). */
  private final ConcurrentHashMap<Boundary, Boundary> boundaries = new ConcurrentHashMap<>();
  private final int max;
  private final Executor pruner;
  private final AtomicBoolean pruning = new AtomicBoolean();

  /** Pruning at the bound runs on one daemon thread shared by every cache: never on the caller's event loop. */
  private static final Executor PRUNER = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "meshplane-token-cache-pruner");
    t.setDaemon(true);
    return t;
  });

  public VerifiedTokens(int max) {
    this(max, PRUNER);
  }

  /** @param pruner where pruning at the bound runs (tests pass a direct executor) */
  VerifiedTokens(int max, Executor pruner) {
    this.max = max;
    this.pruner = pruner;
  }

  /** The caller of this exact token, if its signature was checked before; null otherwise. */
  public Caller get(String jwt) {
    int dot = jwt.lastIndexOf('.');
    if (dot <= 0 || dot == jwt.length() - 1) return null;
    Cached c = map.get(Signature.probe(jwt, dot + 1));
    return c != null && c.rest == fingerprint(jwt, dot) ? c.caller : null;
  }

  /**
   * Remembers a token whose signature is valid. At the bound (rare: a replica sees each agent's token
   * once per credential lifetime), a prune starts on the pruner thread: expired tokens are dropped
   * first, then, if still full, an arbitrary eighth, which pay one more signature check on their next
   * request. A prune of a full cache of 1,000,000 takes 60–85 ms of CPU: too long for an event loop.
   * Tokens verified while it runs are added, so the bound can be passed by a few entries for that time.
   */
  public void put(String jwt, Caller p) {
    int dot = jwt.lastIndexOf('.');
    if (dot <= 0 || dot == jwt.length() - 1) return;
    if (map.size() >= max && pruning.compareAndSet(false, true)) {
      pruner.execute(() -> {
        try {
          prune();
        } finally {
          pruning.set(false);
        }
      });
    }
    Boundary shared = boundaries.computeIfAbsent(p.boundary(), b -> new Boundary(b.team().intern(), b.environment().intern()));
    Caller compact = new Caller(p.kind(), p.id(), p.name(), shared, p.grants(), p.credential(), p.expiresAtMillis());
    map.put(Signature.probe(jwt, dot + 1).stored(), new Cached(compact, fingerprint(jwt, dot)));
  }

  private void prune() {
    long now = System.currentTimeMillis();
    map.values().removeIf(c -> now >= c.caller.expiresAtMillis());
    if (map.size() >= max) {
      int drop = Math.max(1, max / 8);
      for (Iterator<Signature> it = map.keySet().iterator(); drop > 0 && it.hasNext(); drop--) {
        it.next();
        it.remove();
      }
    }
  }

  public int size() {
    return map.size();
  }

  /**
   * 64-bit fingerprint of {@code jwt[0, end)}: four interleaved multiply-add chains (one chain would
   * wait on each multiplication in turn), mixed at the end. Any change of one character changes it;
   * it is not meant to resist someone who crafts collisions, and need not: such a caller already
   * holds the signature, and a hit only ever yields the caller that signature was verified for.
   */
  static long fingerprint(String s, int end) {
    long a = 0x9E3779B97F4A7C15L;
    long b = 0xC2B2AE3D27D4EB4FL;
    long c = 0x165667B19E3779F9L;
    long d = 0x27D4EB2F165667C5L;
    int i = 0;
    for (; i + 3 < end; i += 4) {
      a = (a + s.charAt(i)) * 0x100000001B3L;
      b = (b + s.charAt(i + 1)) * 0x9E3779B97F4A7C15L;
      c = (c + s.charAt(i + 2)) * 0xC2B2AE3D27D4EB4FL;
      d = (d + s.charAt(i + 3)) * 0xFF51AFD7ED558CCDL;
    }
    for (; i < end; i++) a = (a + s.charAt(i)) * 0x100000001B3L;
    long h = a ^ Long.rotateLeft(b, 17) ^ Long.rotateLeft(c, 31) ^ Long.rotateLeft(d, 47) ^ end;
    h ^= h >>> 33;
    h *= 0xFF51AFD7ED558CCDL;
    h ^= h >>> 33;
    return h;
  }

  /**
   * A signature's text: stored as its ASCII bytes, or, to look one up, a view of the request's token
   * (no copy). Hashed over its last 32 characters (uniformly random bytes), compared in full.
   */
  private static final class Signature {
    private final byte[] stored;
    private final String jwt;
    private final int from;
    private final int length;
    private final int hash;

    private Signature(byte[] stored, String jwt, int from, int length, int hash) {
      this.stored = stored;
      this.jwt = jwt;
      this.from = from;
      this.length = length;
      this.hash = hash;
    }

    static Signature probe(String jwt, int from) {
      int h = 0;
      for (int i = Math.max(from, jwt.length() - 32); i < jwt.length(); i++) h = 31 * h + jwt.charAt(i);
      return new Signature(null, jwt, from, jwt.length() - from, h);
    }

    /** The stored form; only for verified tokens, whose signature is base64url, hence ASCII. */
    Signature stored() {
      byte[] b = new byte[length];
      for (int i = 0; i < length; i++) b[i] = (byte) jwt.charAt(from + i);
      return new Signature(b, null, 0, length, hash);
    }

    private char at(int i) {
      return stored != null ? (char) (stored[i] & 0xff) : jwt.charAt(from + i);
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(Object o) {
      if (this == o) return true;
      if (!(o instanceof Signature k) || k.length != length || k.hash != hash) return false;
      for (int i = 0; i < length; i++) {
        if (at(i) != k.at(i)) return false;
      }
      return true;
    }
  }
}
