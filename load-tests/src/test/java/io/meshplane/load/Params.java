package io.meshplane.load;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The parameters of the feeder preparation and the simulations: Java system properties, given on the
 * Maven command line ({@code mvn gatling:test -Dhb.rate=200 ...}; the Gatling plugin and exec:java both
 * pass them on). Every one has a default except the token. A bad value stops the run naming the
 * property.
 */
final class Params {
  private Params() {}

  /** {@code urls}: the coordinator base URLs, comma-separated; requests go round-robin over them. */
  static List<String> urls() {
    String raw = string("urls", "http://127.0.0.1:8080");
    List<String> out = new ArrayList<>();
    for (String part : raw.split(",")) {
      String u = part.trim();
      while (u.endsWith("/")) u = u.substring(0, u.length() - 1);
      if (u.isEmpty()) continue;
      if (!u.startsWith("http://") && !u.startsWith("https://")) {
        throw new IllegalArgumentException("urls: '" + u + "' must start with http:// or https://");
      }
      out.add(u);
    }
    if (out.isEmpty()) throw new IllegalArgumentException("urls: at least one coordinator URL is needed");
    return List.copyOf(out);
  }

  /**
   * {@code token} (or the environment variable {@code MESHPLANE_TOKEN}): the operator's bearer token,
   * an admin token for the simulations; the feeder preparation also takes an enrollment token.
   */
  static String token() {
    return required("token", "MESHPLANE_TOKEN");
  }

  /** A property, else an environment variable, else a stop naming both. */
  static String required(String property, String env) {
    String v = System.getProperty(property);
    if (v == null || v.isBlank()) v = System.getenv(env);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("-D" + property + "=... (or the environment variable " + env + ") is required");
    }
    return v.trim();
  }

  /** {@code agents.file}: the feeder, default {@code <load-tests>/target/agents.csv}. */
  static Path agentsFile() {
    String given = System.getProperty("agents.file");
    if (given != null && !given.isBlank()) return Path.of(given.trim());
    String base = System.getProperty("meshplane.basedir", ".");
    return Path.of(base, "target", "agents.csv");
  }

  /** {@code team}: the team the agents are enrolled in and whose policy the operators edit. */
  static String team() {
    return slug("team", "load");
  }

  /** {@code environment}: the same for the environment. */
  static String environment() {
    return slug("environment", "gatling");
  }

  static String slug(String key, String def) {
    String v = string(key, def);
    if (!v.matches("^[a-z0-9][a-z0-9-]{0,62}$")) {
      throw new IllegalArgumentException(key + ": '" + v + "' must be a slug (a-z, 0-9, '-')");
    }
    return v;
  }

  static String string(String key, String def) {
    String v = System.getProperty(key);
    return v == null || v.isBlank() ? def : v.trim();
  }

  static boolean bool(String key, boolean def) {
    String v = string(key, null);
    if (v == null) return def;
    return switch (v.toLowerCase(Locale.ROOT)) {
      case "true", "1", "yes" -> true;
      case "false", "0", "no" -> false;
      default -> throw new IllegalArgumentException(key + ": '" + v + "' must be true or false");
    };
  }

  static int integer(String key, int def, int min, int max) {
    String v = string(key, null);
    if (v == null) return def;
    try {
      int n = Integer.parseInt(v);
      if (n < min || n > max) throw new NumberFormatException();
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' must be a whole number from " + min + " to " + max);
    }
  }

  static double number(String key, double def, double min, double max) {
    String v = string(key, null);
    if (v == null) return def;
    try {
      double d = Double.parseDouble(v);
      if (!(d >= min && d <= max)) throw new NumberFormatException();
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' must be a number from " + min + " to " + max);
    }
  }

  /** A duration: {@code 60} (seconds), {@code 60s}, {@code 1500ms} or {@code 2m}. */
  static Duration duration(String key, Duration def) {
    String v = string(key, null);
    if (v == null) return def;
    try {
      String s = v.toLowerCase(Locale.ROOT);
      Duration d;
      if (s.endsWith("ms")) d = Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
      else if (s.endsWith("s")) d = Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
      else if (s.endsWith("m")) d = Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1)));
      else d = Duration.ofSeconds(Long.parseLong(s));
      if (d.isNegative()) throw new NumberFormatException();
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' must be a duration such as 60, 60s, 1500ms or 2m");
    }
  }

  /** A p99 bound in milliseconds, for an assertion. */
  static int millis(String key, int def) {
    return integer(key, def, 1, 600_000);
  }
}
