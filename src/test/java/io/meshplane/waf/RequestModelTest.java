package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What rules see of a request: the normalised path, parameters, headers and body, all bounded. */
class RequestModelTest {

  @Test
  void theNormalisedPathIsDecodedOnceWithDotSegmentsAndDuplicateSlashesGone() {
    assertEquals("/etc/passwd", UrlText.normalizePath("/static/../../etc/passwd", null));
    assertEquals("/etc/passwd", UrlText.normalizePath("/static/%2e%2e/%2E%2E/etc/passwd", null));
    assertEquals("/a/c", UrlText.normalizePath("/a/./b/../c", null));
    assertEquals("/a/b/", UrlText.normalizePath("//a///b//", null));
    assertEquals("/", UrlText.normalizePath("", null));
    assertEquals("/", UrlText.normalizePath("/..", null));
    assertEquals("/a/", UrlText.normalizePath("/a/b/..", null));
    // decoded once: a doubly encoded dot stays one layer encoded, for rules reading the raw path to catch
    assertEquals("/a/%2e%2e/etc", UrlText.normalizePath("/a/%252e%252e/etc", null));
    assertEquals("/files/a b/ü", UrlText.normalizePath("/files/a%20b/%C3%BC", null));
  }

  @Test
  void rfc3986RemoveDotSegmentsExamples() {
    assertEquals("/a/g", UrlText.removeDotSegments("/a/b/c/./../../g"));
    assertEquals("mid/6", UrlText.removeDotSegments("mid/content=5/../6"));
    assertEquals("/g", UrlText.removeDotSegments("/../g"));
    assertEquals("", UrlText.removeDotSegments("."));
  }

  @Test
  void malformedEscapesAreKeptAndFlagged() {
    boolean[] bad = {false};
    assertEquals("100%zz", UrlText.decode("100%zz", false, bad));
    assertTrue(bad[0]);
    assertEquals("\uFFFD", UrlText.decode("%C3", false, null), "a cut UTF-8 sequence is U+FFFD, not an exception");
    assertEquals("a b+c", UrlText.decode("a+b%2Bc", true, null));
    RequestModel m = new RequestModel(Corpus.get("/x?q=%zz"));
    assertTrue(m.encodingMalformed);
  }

  @Test
  void queryHeadersAndArgs() {
    RequestModel m = new RequestModel(Corpus.get("/s?q=O%27Brien&tag=a&tag=b&empty=&flag", "X-Trace", "1", "x-trace", "2"));
    assertEquals(Map.of("q", List.of("O'Brien"), "tag", List.of("a", "b"), "empty", List.of(""), "flag", List.of("")), m.query);
    assertEquals(List.of("1", "2"), m.headers.get("x-trace"));
    assertEquals(List.of("O'Brien", "a", "b"), m.args);
    assertEquals("O'Brien\na\nb", m.argsText);
    assertEquals("/s", m.path);
    assertFalse(m.overflow);
  }

  @Test
  void aJsonBodyIsParsedWithinBoundsAndItsStringsBecomeArgs() {
    RequestModel m = new RequestModel(Corpus.post("/api", "application/json; charset=utf-8", "{\"a\": {\"b\": [\"x\", 2, null]}, \"c\": true}"));
    assertEquals(Map.of("a", Map.of("b", List.of("x", 2L, CelValues.NULL)), "c", true), m.bodyJson);
    assertEquals(List.of("x"), m.args);
    assertEquals(List.of("json:b"), m.argSources);
    RequestModel broken = new RequestModel(Corpus.post("/api", "application/json", "{\"a\": "));
    assertTrue(broken.bodyMalformed);
    assertEquals(CelValues.NULL, broken.bodyJson);
    RequestModel deep = new RequestModel(Corpus.post("/api", "application/json", "[".repeat(40) + "]".repeat(40)));
    assertTrue(deep.bodyMalformed, "deeper than the bound: not parsed");
    RequestModel text = new RequestModel(Corpus.post("/api", "text/plain", "{\"a\": 1}"));
    assertEquals(CelValues.NULL, text.bodyJson, "parsed only for a JSON content type");
  }

  @Test
  void aLongBodyIsReadAsItsPrefixAndNotParsed() {
    String big = "{\"a\": \"" + "x".repeat(20_000) + "\"}";
    RequestModel m = new RequestModel(Corpus.post("/api", "application/json", big));
    assertTrue(m.bodyTruncated);
    assertEquals(RequestModel.BODY_PREFIX, m.bodyText.length());
    assertEquals(CelValues.NULL, m.bodyJson);
    assertFalse(m.bodyMalformed, "a cut body is not called malformed");
  }

  @Test
  void formBodiesAreParameters() {
    RequestModel m = new RequestModel(Corpus.post("/contact", "application/x-www-form-urlencoded", "name=Pat+O%27Neil&msg=hi%21"));
    assertEquals(List.of("Pat O'Neil"), m.form.get("name"));
    assertEquals(List.of("Pat O'Neil", "hi!"), m.args);
  }

  @Test
  void tooManyParametersIsOverflowNotASilentCut() {
    StringBuilder t = new StringBuilder("/s?");
    for (int i = 0; i < RequestModel.MAX_PARAMS + 5; i++) t.append("p").append(i).append("=1&");
    RequestModel m = new RequestModel(Corpus.get(t.toString()));
    assertTrue(m.overflow);
    assertEquals(RequestModel.MAX_PARAMS, m.query.size());
  }

  @Test
  void exclusionsNarrowOnlyWhatTheyName() {
    RequestModel m = new RequestModel(Corpus.get("/s?q=union+select&page=2", "Cookie", "a=b"));
    RequestModel n = m.without(Set.of("query:q", "header:cookie"));
    assertEquals(Map.of("page", List.of("2")), n.query);
    assertEquals(List.of("2"), n.args);
    assertEquals("2", n.argsText);
    assertFalse(n.headers.containsKey("cookie"));
    assertTrue(n.headers.containsKey("user-agent"));
    assertEquals("union select\n2", m.argsText, "the request's own model is untouched");
  }

  @Test
  void ipLiteralsAndCidrBlocks() {
    assertTrue(Cidr.parse("10.0.0.0/8").contains("10.200.3.4"));
    assertFalse(Cidr.parse("10.0.0.0/8").contains("11.0.0.1"));
    assertTrue(Cidr.parse("192.168.1.0/25").contains("192.168.1.127"));
    assertFalse(Cidr.parse("192.168.1.0/25").contains("192.168.1.128"));
    assertTrue(Cidr.parse("2001:db8::/32").contains("2001:db8:1::5"));
    assertTrue(Cidr.parse("10.0.0.0/8").contains("::ffff:10.1.2.3"), "a mapped IPv4 address is its IPv4 address");
    assertFalse(Cidr.parse("::/0").contains("10.1.2.3"));
    assertTrue(Cidr.parse("203.0.113.7").contains("203.0.113.7"));
    assertFalse(Cidr.parse("10.0.0.0/8").contains("not-an-ip"));
    assertFalse(Cidr.parse("10.0.0.0/8").contains("010.1.1.1"), "no octal-looking octets");
    assertNull(UrlText.ipBytes("1.2.3"));
    assertNull(UrlText.ipBytes("1::2::3"));
    assertThrows(IllegalArgumentException.class, () -> Cidr.parse("10.0.0.1/8"), "host bits set");
    assertThrows(IllegalArgumentException.class, () -> Cidr.parse("10.0.0.0/33"));
    assertThrows(IllegalArgumentException.class, () -> Cidr.parse("example.com/8"));
  }
}
