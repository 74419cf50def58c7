package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The agent's command line reads ports as the coordinator does: ASCII digits, no sign, no leading zero. */
class AgentArgumentsTest {
  static final CommandLine.Model.CommandSpec SPEC = new CommandLine(new AgentCommand()).getCommandSpec();

  @Test
  void theListenPortIsZeroOrAPortWithoutALeadingZero() {
    assertArrayEquals(new String[] {"127.0.0.1", "9100"}, AgentCommand.listen(SPEC, "127.0.0.1:9100"));
    assertArrayEquals(new String[] {"::1", "0"}, AgentCommand.listen(SPEC, "[::1]:0"));
    for (String bad : List.of("127.0.0.1:09100", "127.0.0.1:+9100", "127.0.0.1:\uff19\uff11\uff10\uff10", "127.0.0.1:00", "127.0.0.1:65536",
        "127.0.0.1:")) {
      assertThrows(CommandLine.ParameterException.class, () -> AgentCommand.listen(SPEC, bad), bad);
    }
  }

  @Test
  void aCoordinatorUrlsPortIsAPortWithoutALeadingZero() {
    assertEquals(8443, Coordinators.parse(List.of("https://c.example.net:8443/base")).get(0).port());
    assertEquals(443, Coordinators.parse(List.of("https://c.example.net")).get(0).port());
    for (String bad : List.of("https://c.example.net:08443", "http://c.example.net:0", "http://c.example.net:00080")) {
      assertThrows(IllegalArgumentException.class, () -> Coordinators.parse(List.of(bad)), bad);
    }
  }
}
