package io.meshplane;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No class over 500 lines, main or test (docs/ARCHITECTURE.md, "Measures"): one top-level type per
 * file, so a file's line count is its class's. A class that grows past it is split by responsibility.
 */
class ClassSizeTest {
  private static final int MAX_LINES = 500;

  @Test
  void noSourceFileIsOverTheLimit() throws IOException {
    Map<String, Integer> over = new TreeMap<>();
    for (String root : new String[] {"src/main/java", "src/test/java"}) {
      try (Stream<Path> files = Files.walk(Path.of(root))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          int lines;
          try (Stream<String> l = Files.lines(f)) {
            lines = (int) l.count();
          }
          if (lines > MAX_LINES) over.put(f.toString(), lines);
        }
      }
    }
    assertEquals(Map.of(), over, "classes over " + MAX_LINES + " lines: split them by responsibility");
  }
}
