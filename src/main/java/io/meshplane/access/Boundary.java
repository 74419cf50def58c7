package io.meshplane.access;

/**
 * Where a caller may act, or where a resource lies: a team and an environment, each a slug or
 * {@code *} (all). Tokens and panel users carry one; nodes, tokens and events lie inside one.
 */
public record Boundary(String team, String environment) {
  public static final String ALL = "*";
  /** Every team and environment: for the coordinator's own jobs, never a caller's. */
  public static final Boundary EVERYTHING = new Boundary(ALL, ALL);

  /** True when a resource of this team and environment lies inside this boundary. */
  public boolean covers(String resourceTeam, String resourceEnvironment) {
    return (ALL.equals(team) || team.equals(resourceTeam)) && (ALL.equals(environment) || environment.equals(resourceEnvironment));
  }

  /** True when {@code other} is the same as or narrower than this boundary ({@code *} is granted only by {@code *}). */
  public boolean contains(Boundary other) {
    return within(other.team, team) && within(other.environment, environment);
  }

  private static boolean within(String inner, String outer) {
    return ALL.equals(outer) || (!ALL.equals(inner) && outer.equals(inner));
  }
}
