package io.meshplane.ingress;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The hostname and path prefix rules of a route (API.md §18), table by table: what is accepted, and what is refused and why. */
class IngressNamesTest {
  static final List<String> GOOD_HOSTS = List.of("app.example.com", "a.b", "xn--bcher-kva.example", "*.example.com", "a-1.example.com",
      "x".repeat(63) + ".example.com",
      "a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + "." + "d".repeat(61));
  static final List<String> BAD_HOSTS = List.of("", "App.example.com", "bücher.example", "example.com.", "a..b", ".example.com",
      "x".repeat(64) + ".example.com", "a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + "." + "d".repeat(62), "foo.*.example.com", "*example.com", "*.com", "a*.example.com",
      "localhost", "-a.example.com", "a-.example.com", "a_b.example.com", "10.0.0.1", "a b.example.com", "a.example.com\u0000",
      "a.example.com:443", "*.*.example.com", "a/b.example.com");
  static final List<String> GOOD_PATHS = List.of("/", "/api", "/api/", "/api/v1", "/a-b_c.d~e", "/%20x", "/caf%C3%A9", "/" + "a".repeat(255),
      "/.well-known/acme");
  static final List<String> BAD_PATHS = List.of("", "api", "/..", "/a/../b", "/a/./b", "/.", "/a//b", "//", "/%2e%2e/x", "/%2E", "/a%2fb",
      "/a%2Fb", "/a%5cb", "/a%25", "/a%00", "/a%1f", "/a%7F", "/a%zz", "/a%2", "/a\\b", "/a b", "/a\u0001", "/a\u007f", "/a?x=1", "/a#f",
      "/caf\u00e9", "/" + "a".repeat(256));

  @Test
  void acceptableHostnamesPass() {
    for (String h : GOOD_HOSTS) assertNull(IngressNames.hostname(h), h);
  }

  @Test
  void hostileHostnamesAreRefusedWithAReason() {
    for (String h : BAD_HOSTS) assertNotNull(IngressNames.hostname(h), h);
  }

  @Test
  void acceptablePathPrefixesPass() {
    for (String p : GOOD_PATHS) assertNull(IngressNames.pathPrefix(p), p);
  }

  @Test
  void hostilePathPrefixesAreRefusedWithAReason() {
    for (String p : BAD_PATHS) assertNotNull(IngressNames.pathPrefix(p), p);
  }
}
