package io.meshplane.auth;

import com.hazelcast.core.EntryAdapter;
import com.hazelcast.core.EntryEvent;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.replicatedmap.ReplicatedMap;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Tokens that must stop working before their {@code exp}: revoked ones, and old tokens retired by a
 * rotation. A Hazelcast ReplicatedMap: every member holds a full copy, so the check on each request is
 * a local memory read (no I/O), and a change made on one replica reaches the others within milliseconds.
 * Entries live until the token's own expiry (TTL), after which {@code exp} alone rejects it. Because the
 * map does not survive a full-cluster restart, every replica also loads the denied tokens from
 * PostgreSQL when it starts (see {@link TokenRepository#deniedTokens}).
 */
final class Denylist {
  public static final String MAP = "meshplane.tokens.denied";

  /** Why a token stops working, and from when. */
  public record Entry(boolean revoked, long notAfterMillis) {
    String encode() {
      return (revoked ? "revoked:" : "retired:") + notAfterMillis;
    }

    static Entry decode(String s) {
      int colon = s.indexOf(':');
      return new Entry(s.startsWith("revoked"), Long.parseLong(s.substring(colon + 1)));
    }

    /** True when this entry denies at least as much as {@code other}: a revocation beats a retirement, an earlier retirement a later one. */
    boolean atLeastAsStrictAs(Entry other) {
      if (revoked != other.revoked) return revoked;
      return revoked || notAfterMillis <= other.notAfterMillis;
    }

    static Entry stricter(Entry a, Entry b) {
      return a.atLeastAsStrictAs(b) ? a : b;
    }
  }

  private final Vertx vertx;
  private final ReplicatedMap<String, String> map;
  /**
   * This member's mirror of the map, kept by an entry listener: a lookup on every request is then a
   * plain hash-map read, with no key serialization (a ReplicatedMap read serializes its key).
   */
  private final ConcurrentHashMap<String, Entry> mirror = new ConcurrentHashMap<>();
  /** Told of every denial this member hears of (the watch stream closes the token's streams): token id, and when it stops working. */
  private final java.util.List<java.util.function.ObjLongConsumer<String>> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

  public Denylist(Vertx vertx, HazelcastInstance hz) {
    this.vertx = vertx;
    this.map = hz.getReplicatedMap(MAP);
    map.addEntryListener(new EntryAdapter<String, String>() {
      @Override
      public void onEntryEvent(EntryEvent<String, String> event) {
        switch (event.getEventType()) {
          // a denial only ever gets stricter: a rotation's "retired" put that lands after a revocation
          // (puts run in no fixed order) does not lift the revocation here
          case ADDED, UPDATED, MERGED -> {
            Entry now = mirror.merge(event.getKey(), Entry.decode(event.getValue()), Entry::stricter);
            for (var l : listeners) l.accept(event.getKey(), now.revoked() ? Long.MIN_VALUE : now.notAfterMillis());
          }
          case REMOVED, EVICTED, EXPIRED -> mirror.remove(event.getKey());
          default -> { }
        }
      }
    });
    // after the listener: whatever arrived before it is copied, whatever arrives after it is heard
    for (Map.Entry<String, String> e : map.entrySet()) mirror.merge(e.getKey(), Entry.decode(e.getValue()), Entry::stricter);
  }

  /**
   * Tells {@code listener} of every denial heard from now on, on a cluster event thread (keep it short):
   * the token id and the time it stops working ({@code Long.MIN_VALUE}: revoked, at once).
   */
  void onDenied(java.util.function.ObjLongConsumer<String> listener) {
    listeners.add(listener);
  }

  /** Local memory read; null when the token is not denied. */
  public Entry lookup(String tokenId) {
    return mirror.get(tokenId);
  }

  /** Records a denial until the token's own expiry. The put may cross the network: done off the event loop. */
  public Future<Void> deny(String tokenId, Entry entry, Instant tokenExpires) {
    return vertx.executeBlocking(() -> {
      putNow(tokenId, entry, tokenExpires);
      return null;
    }, false);
  }

  /**
   * Blocking variant for start-up loading. Never makes a denial laxer: an entry at least as strict is
   * kept (two replicas racing can still leave the laxer one in the map; the mirrors ignore it, and the
   * reconciliation puts PostgreSQL's stricter one back).
   */
  public void putNow(String tokenId, Entry entry, Instant tokenExpires) {
    Entry kept = mirror.merge(tokenId, entry, Entry::stricter);
    String current = map.get(tokenId);
    if (current != null && Entry.decode(current).atLeastAsStrictAs(kept)) return;
    long ttl = Math.max(1000, tokenExpires.toEpochMilli() - System.currentTimeMillis() + 60_000);
    map.put(tokenId, kept.encode(), ttl, TimeUnit.MILLISECONDS);
  }

  /** True when the cluster's copy of this token's denial is missing or laxer than {@code entry}. */
  boolean laxerThan(String tokenId, Entry entry) {
    String current = map.get(tokenId);
    return current == null || !Entry.decode(current).atLeastAsStrictAs(entry);
  }
}
