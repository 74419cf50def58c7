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

  @Test
  void theIngressOptionsAreCheckedBeforeTheAgentStarts() throws Exception {
    java.nio.file.Path pem = java.nio.file.Files.createTempFile("trust", ".pem");
    try {
      IngressEdge.Settings s = AgentCommand.ingress(SPEC, "0.0.0.0:80", "0.0.0.0:443", List.of("100.64.0.3=127.0.0.1"),
          "https://acme.example.net/directory", pem, 0);
      assertEquals(80, s.port());
      assertEquals(443, s.tlsPort());
      assertEquals(java.util.Map.of("100.64.0.3", "127.0.0.1"), s.targetOverrides());
      assertEquals(java.net.URI.create("https://acme.example.net/directory"), s.acmeDirectory());
      assertEquals(-1, AgentCommand.ingress(SPEC, "127.0.0.1:0", null, List.of(), null, null, 0).tlsPort());
      // a TLS listener without ACME: it serves the tls: meshca routes with MeshCA's hostname certificate
      assertEquals(443, AgentCommand.ingress(SPEC, "127.0.0.1:80", "127.0.0.1:443", List.of(), null, null, 0).tlsPort());
    } finally {
      java.nio.file.Files.deleteIfExists(pem);
    }
    List<Runnable> bad = List.of(
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:080", null, List.of(), null, null, 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", "127.0.0.1:99999", List.of(), null, null, 0), // a TLS port out of range
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of("100.64.0.3"), null, null, 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of("100.64.0.3=target.example"), null, null, 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of("a=b=c"), null, null, 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of(), "ftp://acme.example.net/", null, 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of(), "https://acme.example.net/", java.nio.file.Path.of("/nonexistent.pem"), 0),
        () -> AgentCommand.ingress(SPEC, "127.0.0.1:80", null, List.of(), null, java.nio.file.Path.of("/etc/hostname"), 0));
    for (int i = 0; i < bad.size(); i++) {
      CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class, bad.get(i)::run, "case " + i);
      org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("--"), "the message names the option: " + e.getMessage());
    }
  }
}
