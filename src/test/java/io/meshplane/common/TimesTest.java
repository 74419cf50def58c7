package io.meshplane.common;


import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The heartbeat path's cached formatter writes exactly what the general one writes. */
class TimesTest {

  @ParameterizedTest(name = "{0}")
  @ValueSource(longs = {0L, 1L, 999L, 1000L, 1_795_313_740_000L, 1_795_313_740_007L, 1_795_313_740_090L, 1_795_313_740_999L,
      1_795_313_741_000L, 1_795_313_740_500L, 4_102_444_799_999L, -1L, -1_000L, -1_001L})
  void formatMillisMatchesFormat(long epochMillis) {
    assertEquals(Times.format(Instant.ofEpochMilli(epochMillis)), Times.formatMillis(epochMillis));
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(longs = {1_795_313_740_123L})
  void aNewSecondIsNotAnsweredFromTheCachedOne(long t) {
    assertEquals("2026-11-22T02:15:40.123Z", Times.formatMillis(t));
    assertEquals("2026-11-22T02:15:41.123Z", Times.formatMillis(t + 1000));
    assertEquals("2026-11-22T02:15:40.124Z", Times.formatMillis(t + 1));
  }
}
