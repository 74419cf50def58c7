package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.access.Role;
import io.meshplane.common.Times;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/** A panel user as stored (API.md §17); {@link #toJson} never includes the password hash. */
record UserRecord(String id, String username, String passwordHash, Role role, String team, String environment, boolean disabled,
    Instant createdAt, Instant updatedAt, Instant lastLoginAt, String createdBy) {

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
        .put("created_by", createdBy);
  }
}
