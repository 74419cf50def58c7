package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.access.Role;
import io.meshplane.common.Times;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/**
 * A panel user as stored (API.md §17); {@link #toJson} never includes the password hash.
 *
 * @param source {@link #LOCAL} (a password) or {@link #OIDC} (signs in through the identity provider only)
 * @param oidcIssuer for an IdP user, the issuer it came from; null for a local one
 * @param oidcSubject for an IdP user, its {@code sub} at that issuer; null for a local one
 */
record UserRecord(String id, String username, String passwordHash, Role role, String team, String environment, boolean disabled,
    Instant createdAt, Instant updatedAt, Instant lastLoginAt, String createdBy, String source, String oidcIssuer, String oidcSubject) {
  static final String LOCAL = "local";
  static final String OIDC = "oidc";
  /** The password hash of an IdP user: not a PHC string, so no password ever matches it. */
  static final String NO_PASSWORD = "!oidc";

  /** A local user (a password). */
  UserRecord(String id, String username, String passwordHash, Role role, String team, String environment, boolean disabled,
      Instant createdAt, Instant updatedAt, Instant lastLoginAt, String createdBy) {
    this(id, username, passwordHash, role, team, environment, disabled, createdAt, updatedAt, lastLoginAt, createdBy, LOCAL, null, null);
  }

  boolean oidc() {
    return OIDC.equals(source);
  }

  Boundary boundary() {
    return new Boundary(team, environment);
  }

  JsonObject toJson() {
    return new JsonObject()
        .put("id", id)
        .put("username", username)
        .put("role", role.wire)
        .put("team", team)
        .put("environment", environment)
        .put("disabled", disabled)
        .put("created_at", Times.format(createdAt))
        .put("updated_at", Times.format(updatedAt))
        .put("last_login_at", lastLoginAt == null ? null : Times.format(lastLoginAt))
        .put("created_by", createdBy)
        .put("source", source);
  }
}
