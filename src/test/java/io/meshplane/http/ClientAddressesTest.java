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
  void addressesAreInTheirUsualForm() {
    assertEquals("::1", ClientAddresses.NONE.resolve("0:0:0:0:0:0:0:1", null));
    assertEquals("2001:db8::7", ClientAddresses.NONE.resolve("2001:0db8:0:0:0:0:0:7", null));
    assertEquals("192.0.2.7", ClientAddresses.NONE.resolve("::ffff:192.0.2.7", null), "IPv4-mapped is shown as IPv4");
    assertEquals("192.0.2.7", ClientAddresses.NONE.resolve("0:0:0:0:0:ffff:c000:207", null));
    // a mapped proxy address is trusted as the IPv4 address it is, and the client named by the header is in its usual form too
    assertEquals("2001:db9::1", proxies.resolve("::ffff:10.0.0.5", "2001:db9:0:0:0:0:0:1"));
    assertEquals("198.51.100.7", proxies.resolve("10.0.0.5", "::ffff:198.51.100.7"));
    assertEquals("not an address", io.meshplane.common.Addresses.canonical("not an address"));
    assertEquals(null, io.meshplane.common.Addresses.canonical(null));
  }

  @Test
  void badEntriesAreRefusedByName() {
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("proxy.example")));
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("10.0.0.0/33")));
    assertThrows(IllegalArgumentException.class, () -> ClientAddresses.of(List.of("10.0.0.0/x")));
  }
}
