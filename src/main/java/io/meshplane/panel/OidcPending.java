package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.HazelcastJsonValue;
import com.hazelcast.map.IMap;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.TimeUnit;

/**
 * Logins started and not yet back from the IdP, shared by every replica (the IdP may send the browser
 * back to another replica than the one it left): a Hazelcast map from the digest of the login's
 * {@code state} to its nonce, PKCE verifier, the digest of the browser's binding cookie and the
 * digest of the panel session the browser held at the start (ended when the login succeeds), each entry
 * with a time-to-live of {@link OidcSettings#PENDING_TTL}. A callback takes its entry out with one
 * remove on the member that owns it: a state works once, on whichever replica comes first. The map's
 * size is bounded by the cluster-wide limit on starts ({@link RateLimits#oidcStart()}).
 */
final class OidcPending {
  static final String MAP = "meshplane.panel.oidc_pending";

  /**
   * What a callback needs of its login: the nonce the ID token must carry, the PKCE verifier, the
   * browser it must come from, and the key (digest) of the panel session that browser held when the
   * login started, or null. The start is a same-site navigation and receives the session's
   * {@code SameSite=Strict} cookie; the callback, coming from the IdP's site, does not.
   */
  record Login(String nonce, String codeVerifier, String browserDigest, long startedAtMs, String previousSession) {}

  private final Vertx vertx;
  private final IMap<String, HazelcastJsonValue> map;

  OidcPending(Vertx vertx, HazelcastInstance hz) {
    this.vertx = vertx;
    this.map = hz.getMap(MAP);
  }

  Future<Void> put(String state, Login login) {
    JsonObject j = new JsonObject().put("nonce", login.nonce()).put("verifier", login.codeVerifier()).put("browser", login.browserDigest())
        .put("started_at", login.startedAtMs()).put("previous", login.previousSession());
    return Future.fromCompletionStage(map.setAsync(Sessions.digest(state), new HazelcastJsonValue(j.encode()),
        OidcSettings.PENDING_TTL.toMillis(), TimeUnit.MILLISECONDS), vertx.getOrCreateContext());
  }

  /** Takes the login of {@code state} out (single use), or null: unknown, expired, or already used. */
  Future<Login> take(String state) {
    if (!Sessions.wellFormed(state)) return Future.succeededFuture(null);
    return Future.fromCompletionStage(map.removeAsync(Sessions.digest(state)), vertx.getOrCreateContext()).map(v -> {
      if (v == null) return null;
      try {
        JsonObject j = new JsonObject(v.getValue());
        return new Login(j.getString("nonce"), j.getString("verifier"), j.getString("browser"), j.getLong("started_at"), j.getString("previous"));
      } catch (RuntimeException e) {
        return null;
      }
    });
  }
}
