package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The watch stream's line splitter: lines split over chunks, several per chunk, the length cap. */
class NdjsonLinesTest {
  final List<String> lines = new ArrayList<>();

  boolean feed(NdjsonLines s, String chunk) {
    return s.feed(Buffer.buffer(chunk), b -> lines.add(b.toString(StandardCharsets.UTF_8)));
  }

  @Test
  void severalLinesInOneChunkComeOutInOrder() {
    NdjsonLines s = new NdjsonLines(1024);
    assertTrue(feed(s, "{\"type\":\"answer\"}\n{\"type\":\"ping\"}\n"));
    assertEquals(List.of("{\"type\":\"answer\"}", "{\"type\":\"ping\"}"), lines);
    assertEquals(0, s.pendingBytes(), "nothing held between chunks that end on a line's end");
  }

  @Test
  void aLineSplitOverChunksComesOutWholeOnceItsEndArrives() {
    NdjsonLines s = new NdjsonLines(1024);
    assertTrue(feed(s, "{\"type\":\"ans"));
    assertTrue(feed(s, "wer\",\"seq\":7"));
    assertEquals(List.of(), lines, "no line before its \\n");
    assertTrue(feed(s, "}\n{\"type\":"));
    assertEquals(List.of("{\"type\":\"answer\",\"seq\":7}"), lines);
    assertTrue(feed(s, "\"ping\"}\r\n\n"));
    assertEquals(List.of("{\"type\":\"answer\",\"seq\":7}", "{\"type\":\"ping\"}"), lines, "a \\r before the \\n goes, empty lines are skipped");
  }

  @Test
  void anyChunkingOfAStreamGivesTheSameLines() {
    StringBuilder text = new StringBuilder();
    List<String> expected = new ArrayList<>();
    Random r = new Random(42);
    for (int i = 0; i < 200; i++) {
      String line = "{\"type\":\"answer\",\"n\":" + i + ",\"pad\":\"" + "é".repeat(r.nextInt(40)) + "\"}";
      expected.add(line);
      text.append(line).append('\n');
    }
    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
    for (int round = 0; round < 20; round++) {
      lines.clear();
      NdjsonLines s = new NdjsonLines(1024);
      int at = 0;
      while (at < bytes.length) {
        int n = Math.min(bytes.length - at, 1 + r.nextInt(round < 10 ? 7 : 300)); // splits inside multi-byte characters too
        assertTrue(s.feed(Buffer.buffer().appendBytes(bytes, at, n), b -> lines.add(b.toString(StandardCharsets.UTF_8))));
        at += n;
      }
      assertEquals(expected, lines, "round " + round);
    }
  }

  @Test
  void aLineLongerThanTheCapIsAProtocolErrorAndNothingMoreIsDelivered() {
    NdjsonLines s = new NdjsonLines(16);
    assertTrue(feed(s, "0123456789abcdef\n"), "exactly the cap passes");
    assertFalse(feed(s, "0123456789abcdefX\nok\n"), "one byte more in one chunk fails");
    assertTrue(s.failed());
    assertFalse(feed(s, "ok\n"), "a failed splitter stays failed");
    assertEquals(List.of("0123456789abcdef"), lines);

    NdjsonLines split = new NdjsonLines(16);
    assertTrue(feed(split, "0123456789"));
    assertFalse(feed(split, "abcdefgh"), "a pending line past the cap fails before its end arrives");
    assertEquals(0, split.pendingBytes(), "and holds nothing");

    split.reset();
    assertTrue(feed(split, "fresh\n"), "a new stream starts clean");
    assertEquals("fresh", lines.get(lines.size() - 1));
  }
}
