package io.meshplane.common;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the operator-facing duration syntax: {@code 500ms}, {@code 30s}, {@code 15m}, {@code 24h}, {@code 90d}. */
public final class Durations {
  private static final Pattern FORMAT = Pattern.compile("^(\\d{1,9})(ms|s|m|h|d)$");

  private Durations() {}

  /** @throws IllegalArgumentException with a message fit for an operator when the text is not a duration */
  public static Duration parse(String text) {
    Matcher m = FORMAT.matcher(text == null ? "" : text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a duration (write e.g. 500ms, 30s, 15m, 24h, 90d)");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
  }

  /** The shortest exact spelling of a duration in the same syntax (for logs and docs). */
  public static String format(Duration d) {
    long ms = d.toMillis();
    if (ms % 86_400_000L == 0 && ms > 0) return ms / 86_400_000L + "d";
    if (ms % 3_600_000L == 0 && ms > 0) return ms / 3_600_000L + "h";
    if (ms % 60_000L == 0 && ms > 0) return ms / 60_000L + "m";
    if (ms % 1000L == 0) return ms / 1000L + "s";
    return ms + "ms";
  }
}
