package io.meshplane.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The hand-written parsers of the heartbeat path accept exactly the documented formats. */
class NodeFormatsTest {

  @ParameterizedTest(name = "endpoint \"{0}\" -> {1}")
  @CsvSource(delimiter = '|', value = {
      "198.51.100.7:41641|true",
      "0.0.0.0:1|true",
      "255.255.255.255:65535|true",
      "[2001:db8::1]:41641|true",
      "[::1]:1|true",
      "198.51.100.7|false",
      "198.51.100.7:|false",
      "198.51.100.7:0|false",
      "198.51.100.7:65536|false",
      "198.51.100.7:123456|false",
      "198.51.100.7:+80|false",
      "198.51.100.7:8a|false",
      "256.1.1.1:80|false",
      "01.2.3.4:80|false",
      "1.2.3:80|false",
      "1.2.3.4.5:80|false",
      "1..3.4:80|false",
      "1.2.3.4 :80|false",
      "1234.2.3.4:80|false",
      ":80|false",
      "[:80|false",
      "[]:80|false",
      "[2001:db8::1:80|false",
      "[zz::1]:80|false",
      "example.com:80|false",
      "１.2.3.4:80|false",
      "198.51.100.7:041641|false",
      "198.51.100.7:0443|false",
      "198.51.100.7:４４３|false",
  })
  void endpoints(String s, boolean valid) {
    assertEquals(valid, NodeFormats.endpoint(s));
  }

  /** Ports as policy ports are read: ASCII digits without a leading zero, 1-65535 (one spelling per port). */
  @ParameterizedTest(name = "service \"{0}\" -> {1}")
  @CsvSource(delimiter = '|', value = {
      "ssh:22|true",
      "web:8080|true",
      "a:1|true",
      "a:65535|true",
      "ssh:022|false",
      "ssh:0022|false",
      "ssh:00022|false",
      "ssh:0|false",
      "ssh:00|false",
      "ssh:65536|false",
      "ssh:100000|false",
      "ssh:+22|false",
      "ssh:-22|false",
      "ssh:２２|false",
      "ssh:٢٢|false",
      "ssh:2２|false",
      "ssh:|false",
      "ssh: 22|false",
      "Ssh:22|false",
      ":22|false",
  })
  void services(String s, boolean valid) {
    assertEquals(valid, NodeFormats.service(s));
  }

  @ParameterizedTest(name = "cidr \"{0}\" -> {1}")
  @CsvSource(delimiter = '|', value = {
      "10.1.0.0/24|true",
      "0.0.0.0/0|true",
      "10.1.2.3/32|true",
      "10.1.0.0/16|true",
      "10.1.0.1/24|false",
      "10.1.0.0/33|false",
      "10.1.0.0/|false",
      "10.1.0.0/-1|false",
      "10.1.0.0/+8|false",
      "10.1.0.0/1234|false",
      "10.1.0/24|false",
      "/24|false",
      "10.1.0.0|false",
      "fd00::/64|true",
      "fd00::1/64|false",
      "fd00::/129|false",
      "::/0|true",
  })
  void cidrs(String s, boolean valid) {
    assertEquals(valid, NodeFormats.cidr(s));
  }

  @ParameterizedTest(name = "ipv4 \"{0}\" -> {1}")
  @CsvSource(delimiter = '|', value = {
      "198.51.100.7|3325256711",
      "0.0.0.0|0",
      "255.255.255.255|4294967295",
      "1.2.3.04|-1",
      "1.2.3.4.|-1",
      ".1.2.3|-1",
  })
  void ipv4Values(String s, long value) {
    assertEquals(value, NodeFormats.ipv4(s, 0, s.length()));
  }
}
