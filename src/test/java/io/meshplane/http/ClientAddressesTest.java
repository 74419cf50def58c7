package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Whose X-Forwarded-For is believed, and which entry names the client. */
class ClientAddressesTest {
  final ClientAddresses proxies = ClientAddresses.of(List.of("10.0.0.0/8", "192.0.2.1", "2001:db8::/32"));

  @Test
  void withoutTrustedProxiesTheTcpPeerIsTheClient() {
    assertEquals("10.1.2.3", ClientAddresses.NONE.resolve("10.1.2.3", "198.51.100.7"));
  }

  @Test
  void anUntrustedPeerCannotChooseItsAddress() {
    assertEquals("203.0.113.9", proxies.resolve("203.0.113.9", "198.51.100.7"));
  }

  @Test
  void theFirstUntrustedAddressFromTheRightIsTheClient() {
    assertEquals("198.51.100.7", proxies.resolve("10.0.0.5", "198.51.100.7"));
    // a client that sends its own X-Forwarded-For gets it kept on the left: it does not count
    assertEquals("198.51.100.7", proxies.resolve("10.0.0.5", "6.6.6.6, 198.51.100.7, 192.0.2.1"));
    assertEquals("2001:db9::1", proxies.resolve("2001:db8::1", "2001:db9::1"));
  }

  @Test
  void garbageStopsTheWalkAndIsNeverTheAddress() {
    assertEquals("198.51.100.7", proxies.resolve("10.0.0.5", "evil.example, 198.51.100.7"));
    assertEquals("10.0.0.5", proxies.resolve("10.0.0.5", "not-an-ip"));
    assertEquals("10.0.0.5", proxies.resolve("10.0.0.5", ""));
    assertEquals("10.0.0.4", proxies.resolve("10.0.0.5", "10.0.0.4"), "all hops trusted: the leftmost");
  }

  @Test
  void badEntriesAreRefusedByName() {
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("proxy.example")));
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("10.0.0.0/33")));
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("10.0.0.0/x")));
  }
}
