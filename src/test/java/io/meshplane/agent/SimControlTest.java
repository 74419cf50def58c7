package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code simulate --control}: the commands read from the lines appended, in order; the refusals; the fraction's draw. */
class SimControlTest {
  @TempDir Path dir;

  @Test
  void linesAppendedAreReadOnceInOrderAndBadOnesRefused() throws Exception {
    Path f = dir.resolve("control");
    List<SimControl.Command> got = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    SimControl c = new SimControl(f, got::add, refused::add);
    c.poll(); // no file yet: nothing
    Files.writeString(f, "# the drill\noffline 0.05\n\nonline\noffline 2\nhalf\nonl");
    c.poll();
    assertEquals(List.of(new SimControl.Command(0.05), new SimControl.Command(0)), got);
    assertEquals(2, refused.size(), refused.toString());
    assertTrue(refused.get(0).contains("'offline 2'"), refused.get(0));
    Files.writeString(f, "ine\n", StandardOpenOption.APPEND); // the partial line completed
    c.poll();
    c.poll();
    assertEquals(3, got.size());
    assertTrue(got.get(2).online());
    String[] why = new String[1];
    assertNull(SimControl.parse("offline 0\u0007", why));
    assertTrue(why[0].contains("'offline 0?'"), why[0]);
  }

  @Test
  void aFractionSelectsThatShareOfTheFleetEvenly() {
    int n = 0;
    int firstHalf = 0;
    for (int node = 0; node < 10_000; node++) {
      if (SimControl.selected(node, 0.05)) {
        n++;
        if (node < 5_000) firstHalf++;
      }
    }
    assertTrue(n >= 495 && n <= 505, "selected " + n);
    assertTrue(firstHalf >= 245 && firstHalf <= 255, "first half " + firstHalf);
    for (int node = 0; node < 1000; node++) assertTrue(!SimControl.selected(node, 0.05) || SimControl.selected(node, 0.1), "nested");
  }
}
