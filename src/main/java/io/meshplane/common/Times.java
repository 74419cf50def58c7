package io.meshplane.common;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/** Timestamps on the wire: ISO 8601 UTC with {@code Z}, millisecond precision (API.md §1). */
public final class Times {
  private static final DateTimeFormatter WIRE = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  private static final DateTimeFormatter WIRE_SECOND = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.").withZone(ZoneOffset.UTC);
  /** The formatted second of the latest {@link #formatMillis} call (hot path: one format per second, not per call). */
  private static volatile SecondPrefix lastSecond = new SecondPrefix(Long.MIN_VALUE, "");

  private record SecondPrefix(long second, String text) {}

  private Times() {}

  /** {@link #format(Instant)} of an epoch-millisecond time, for the heartbeat path: formats once per second. */
  public static String formatMillis(long epochMillis) {
    long second = Math.floorDiv(epochMillis, 1000L);
    int milli = (int) Math.floorMod(epochMillis, 1000L);
    SecondPrefix p = lastSecond;
    if (p.second() != second) {
      p = new SecondPrefix(second, WIRE_SECOND.format(Instant.ofEpochSecond(second)));
      lastSecond = p;
    }
    return new StringBuilder(p.text().length() + 4).append(p.text())
        .append((char) ('0' + milli / 100)).append((char) ('0' + milli / 10 % 10)).append((char) ('0' + milli % 10))
        .append('Z').toString();
  }

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
