package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.HazelcastJsonValue;
import com.hazelcast.map.IMap;
import com.hazelcast.query.Predicates;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/**
 * The panel's sessions, shared by every replica: a Hazelcast map (replicated to a backup member, so a
 * replica's crash logs nobody out) from the SHA-256 digest of the session id to the {@link Session}.
 * The id itself (256 random bits) lives only in the person's cookie: a heap dump or a map listing
 * shows no usable session.
 *
 * <p>Expiry is the map's own, so an unused session disappears from every replica without a sweeper:
 * each write gives the entry a time-to-live of {@code idle × 5/4}, capped by what is left of the
 * absolute lifetime, and a session in use is written again once a quarter of the idle timeout has
 * passed since its last write. So a session ends between {@code idle} and {@code idle × 5/4} after
 * its last use, and at its lifetime at the latest. The idle clock is the entry's own TTL, set by a
 * write, not a read: a backup that takes over after a replica's crash holds the same deadline as the
 * primary had (Hazelcast's max-idle would restart there from the last write, and could end sessions
 * in use). The cost: one write per session and quarter idle timeout in use. Logging out, or any change
 * to the user (disabled, new role, new password), removes the entries at once on every replica.
 */
final class Sessions {
  static final String MAP = "meshplane.panel.sessions";
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

  /** A new session: its id (for the cookie, shown once) and what is stored. */
  record Created(String id, Session session) {}

  private final Vertx vertx;
  private final IMap<String, HazelcastJsonValue> map;
  private final Duration idle;
  private final Duration lifetime;

  Sessions(Vertx vertx, HazelcastInstance hz, Duration idle, Duration lifetime) {
    this.vertx = vertx;
    this.map = hz.getMap(MAP);
    this.idle = idle;
    this.lifetime = lifetime;
  }

  Duration idle() {
    return idle;
  }

  /** Stores a new session for {@code user}; its id is new (never the one a request came with). */
  Future<Created> create(UserRecord user) {
    return create(user, UserRecord.LOCAL);
  }

  /** The same, for a login through {@code source} ({@code local}: a password, {@code oidc}: single sign-on). */
  Future<Created> create(UserRecord user, String source) {
    String id = random();
    long now = System.currentTimeMillis();
    Session s = new Session(digest(id), user.id(), user.username(), user.role(), user.team(), user.environment(), random(), now,
        now + lifetime.toMillis(), now, source);
    return write(s, now).map(v -> new Created(id, s));
  }

  private Future<Void> write(Session s, long now) {
    long ttl = Math.min(s.expiresAtMs() - now, idle.toMillis() + idle.toMillis() / 4);
    return Future.fromCompletionStage(map.setAsync(s.key(), new HazelcastJsonValue(s.toJson().encode()), ttl, TimeUnit.MILLISECONDS),
        vertx.getOrCreateContext());
  }

  /**
   * The session of a cookie's id, or null when there is none (never was, ended, expired). A session
   * last written a quarter of the idle timeout ago or more is written again (its idle clock restarts).
   */
  Future<Session> find(String id) {
    if (!wellFormed(id)) return Future.succeededFuture(null);
    String key = digest(id);
    return Future.fromCompletionStage(map.getAsync(key), vertx.getOrCreateContext()).compose(v -> {
      if (v == null) return Future.succeededFuture(null);
      Session s = Session.fromJson(key, new JsonObject(v.getValue()));
      long now = System.currentTimeMillis();
      if (s == null || s.expiresAtMs() <= now) return Future.succeededFuture(null);
      if (now - s.writtenAtMs() < idle.toMillis() / 4) return Future.succeededFuture(s);
      Session fresh = s.rewritten(now);
      long ttl = Math.min(fresh.expiresAtMs() - now, idle.toMillis() + idle.toMillis() / 4);
      return Future.fromCompletionStage(map.submitToKey(key, new SessionTouch(fresh.toJson().encode(), ttl)), vertx.getOrCreateContext())
          .map(stillThere -> Boolean.TRUE.equals(stillThere) ? fresh : null);
    });
  }

  /** Ends one session (logout), on every replica. */
  Future<Void> end(String key) {
    return Future.fromCompletionStage(map.removeAsync(key), vertx.getOrCreateContext()).mapEmpty();
  }

  /** Ends every session of a user (disabled, role or password changed), on every replica at once. */
  Future<Void> endAllOf(String userId) {
    return vertx.executeBlocking(() -> {
      map.removeAll(Predicates.equal("user_id", userId));
      return null;
    }, false);
  }

  /** Sessions whose primary copy this member holds: summed over the replicas, every session once. */
  int localCount() {
    return map.localKeySet().size();
  }

  /** 256 random bits, URL-safe base64 (43 characters). */
  static String random() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return B64.encodeToString(b);
  }

  static boolean wellFormed(String id) {
    if (id == null || id.length() != 43) return false;
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      if (!(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')) return false;
    }
    return true;
  }

  static String digest(String id) {
    try {
      return B64.encodeToString(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.US_ASCII)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Constant-time comparison of a presented CSRF token with the session's. */
  static boolean sameToken(String presented, String expected) {
    if (presented == null) return false;
    return MessageDigest.isEqual(presented.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8));
  }
}
