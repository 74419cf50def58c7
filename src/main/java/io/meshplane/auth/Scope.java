package io.meshplane.auth;

import io.meshplane.access.Boundary;
import io.meshplane.access.Surface;
import io.vertx.core.json.JsonObject;

/** A token's scope (API.md §5): where it may act (team and environment, each a slug or {@code *}) and its surface. */
public record Scope(String team, String environment, Surface surface) {
  public Boundary boundary() {
    return new Boundary(team, environment);
  }

  public JsonObject toJson() {
    return new JsonObject().put("team", team).put("surface", surface.wire).put("environment", environment);
  }
}
