package io.meshplane.http;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/** Timestamps on the wire: ISO 8601 UTC with {@code Z}, millisecond precision (SPEC §2). */
public final class Times {
  private static final DateTimeFormatter WIRE = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  private Times() {}

  public static String format(Instant t) {
    return t == null ? null : WIRE.format(t);
  }

  public static String format(OffsetDateTime t) {
    return t == null ? null : WIRE.format(t.toInstant());
  }

  public static Instant now() {
    return Instant.now().truncatedTo(ChronoUnit.MILLIS);
  }
}
