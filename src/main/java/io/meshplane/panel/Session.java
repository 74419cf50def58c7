package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Grants;
import io.meshplane.access.Role;
import io.vertx.core.json.JsonObject;

/**
 * One signed-in person, as the cluster holds it: who (copied from the user at login; any change of
 * the user ends their sessions, so the copy never goes stale), the CSRF token, and when the session
 * ends at the latest, and when the entry was last written (the idle clock, see {@link Sessions}).
 * Stored as JSON in the sessions map under the digest of the session id.
 *
 * @param key the digest of the session id: the map key, and the {@link Caller}'s credential
 * @param source how the person signed in: {@code local} (a password) or {@code oidc} (single sign-on)
 */
record Session(String key, String userId, String username, Role role, String team, String environment, String csrf, long createdAtMs,
    long expiresAtMs, long writtenAtMs, String source) {

  /** The same session, written again now (its idle clock restarts from here on every member, backups included). */
  Session rewritten(long now) {
    return new Session(key, userId, username, role, team, environment, csrf, createdAtMs, expiresAtMs, now, source);
  }

  Caller caller() {
    return new Caller(Caller.Kind.USER, userId, username, new Boundary(team, environment), Grants.of(role), key, expiresAtMs);
  }

  JsonObject toJson() {
    return new JsonObject()
        .put("user_id", userId)
        .put("username", username)
        .put("role", role.wire)
        .put("team", team)
        .put("environment", environment)
        .put("csrf", csrf)
        .put("created_at", createdAtMs)
        .put("expires_at", expiresAtMs)
        .put("written_at", writtenAtMs)
        .put("source", source);
  }

  /** The session stored under {@code key}, or null when the stored JSON is not one (never trusted blindly). */
  static Session fromJson(String key, JsonObject j) {
    try {
      Role role = Role.parse(j.getString("role"));
      String csrf = j.getString("csrf");
      if (role == null || csrf == null) return null;
      return new Session(key, j.getString("user_id"), j.getString("username"), role, j.getString("team"), j.getString("environment"),
          csrf, j.getLong("created_at"), j.getLong("expires_at"), j.getLong("written_at"), j.getString("source", UserRecord.LOCAL));
    } catch (ClassCastException | NullPointerException e) {
      return null;
    }
  }
}
