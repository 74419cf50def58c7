package io.meshplane.auth;

import io.vertx.core.json.JsonObject;

/**
 * Where a token (or user) may act: a team and an environment, each a slug or {@code *}, plus the
 * surface that says what it may do there.
 */
public record Scope(String team, String environment, Surface surface) {
  public static final String ALL = "*";

  /** True when a resource of this team and environment lies inside the scope. */
  public boolean covers(String resourceTeam, String resourceEnvironment) {
    return (ALL.equals(team) || team.equals(resourceTeam)) && (ALL.equals(environment) || environment.equals(resourceEnvironment));
  }

  /** True when {@code other}'s team and environment are the same as or narrower than this scope's. */
  public boolean contains(Scope other) {
    return within(other.team, team) && within(other.environment, environment);
  }

  private static boolean within(String inner, String outer) {
    return ALL.equals(outer) || (!ALL.equals(inner) && outer.equals(inner));
  }

  public JsonObject toJson() {
    return new JsonObject().put("team", team).put("surface", surface.wire).put("environment", environment);
  }
}
