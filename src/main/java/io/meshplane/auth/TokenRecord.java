package io.meshplane.auth;

import io.meshplane.common.Times;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/** A token's metadata as stored (never the JWT). */
public record TokenRecord(
    String id,
    String name,
    Scope scope,
    String nodeId,
    String keyId,
    Instant expiresAt,
    Instant createdAt,
    String createdBy,
    Instant revokedAt,
    Instant retireAt,
    String rotatedTo,
    Instant lastUsedAt) {

  /** When the token stops working: its expiry, or earlier if a rotation retires it. */
  public Instant effectiveExpiry() {
    return retireAt != null && retireAt.isBefore(expiresAt) ? retireAt : expiresAt;
  }

  public boolean activeAt(Instant now) {
    return revokedAt == null && now.isBefore(effectiveExpiry());
  }

  public JsonObject toJson(Instant lastUse) {
    return new JsonObject()
        .put("id", id)
        .put("name", name)
        .put("scope", scope.toJson())
        .put("expires", Times.format(effectiveExpiry()))
        .put("created_at", Times.format(createdAt))
        .put("created_by", createdBy)
        .put("revoked_at", Times.format(revokedAt))
        .put("rotated_to", rotatedTo)
        .put("last_used_at", Times.format(lastUse));
  }
}
