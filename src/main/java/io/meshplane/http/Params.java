package io.meshplane.http;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.common.Fields;
import io.meshplane.common.Refusal;
import io.vertx.ext.web.RoutingContext;

/**
 * Query parameters, read strictly. {@link RequestTarget} has already refused bad escapes, ';' and
 * repeated names, so each parameter has one value; here numbers are ASCII digits only
 * ({@code Integer.parseInt} also takes fullwidth and other Unicode digits, and a sign).
 */
public final class Params {
  private Params() {}

  /** A whole number from {@code min} to {@code max}, or {@code absent} when the parameter is not given. */
  public static int integer(RoutingContext ctx, String name, int min, int max, int absent) {
    String raw = ctx.request().getParam(name);
    if (raw == null) return absent;
    long v = digits(raw);
    if (v < min || v > max) throw Refusal.invalid(name, "must be a whole number from " + min + " to " + max);
    return (int) v;
  }

  /**
   * {@code If-Match: 7} or {@code If-Match: "7"}: the version a client read (a strong ETag of ASCII
   * digits, at most 18); null when the header is absent; 400 naming {@code If-Match} otherwise.
   *
   * @param what what the version is of, for the problem's message ("the policy version")
   */
  public static Long ifMatchVersion(RoutingContext ctx, String what) {
    String h = ctx.request().getHeader("If-Match");
    if (h == null) return null;
    String v = h.trim();
    if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) v = v.substring(1, v.length() - 1);
    if (v.isEmpty() || v.length() > 18 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw Refusal.invalid("If-Match", "must be " + what + " you read (the ETag), e.g. 7 or \"7\"");
    }
    return Long.parseLong(v);
  }

  /** {@code true}, {@code false}, or false when absent. */
  public static boolean flag(RoutingContext ctx, String name) {
    String v = ctx.request().getParam(name);
    if (v == null || v.equals("false")) return false;
    if (v.equals("true")) return true;
    throw Refusal.invalid(name, "must be true or false");
  }

  /** The value of 1-9 ASCII digits, or -1. */
  static long digits(String s) {
    if (s.isEmpty() || s.length() > 9) return -1;
    long v = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') return -1;
      v = v * 10 + (c - '0');
    }
    return v;
  }

  /** An id of kind {@code prefix} ({@code nd}) from the path's {@code {id}}; one that cannot be such an id is simply not found (404 "no {what} …"). */
  public static String pathId(RoutingContext ctx, String prefix, String what) {
    String id = ctx.pathParam("id");
    if (!io.meshplane.common.Ids.looksLike(prefix, id)) throw io.meshplane.common.Refusal.notFound("no " + what + " " + id);
    return id;
  }

  /**
   * {@code ?team=&environment=} of a per-team document (the ACL policy, the traffic policy): each the
   * caller's own where that is a single value, required (400 naming it) where the credential covers
   * every one. Returns {team, environment}.
   */
  public static String[] teamAndEnvironment(RoutingContext ctx, Caller caller) {
    Fields f = new Fields();
    String team = scopePart(f, ctx, "team", caller.team());
    String env = scopePart(f, ctx, "environment", caller.environment());
    f.check();
    return new String[] {team, env};
  }

  private static String scopePart(Fields f, RoutingContext ctx, String key, String callers) {
    String v = ctx.request().getParam(key);
    if (v == null) {
      if (Boundary.ALL.equals(callers)) f.error(key, "is required when your credential covers every " + key);
      return callers;
    }
    if (!Fields.isSlug(v)) f.error(key, "must be lower-case letters, digits and '-'");
    return v;
  }

  /** The stored version in the path ({@code {version}}): ASCII digits, at most 18; anything else is 404 ("no {@code what} version …"). */
  public static long versionPath(RoutingContext ctx, String what) {
    String v = ctx.pathParam("version");
    if (v == null || v.isEmpty() || v.length() > 18 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw Refusal.notFound("no " + what + " version " + v);
    }
    return Long.parseLong(v);
  }
}
