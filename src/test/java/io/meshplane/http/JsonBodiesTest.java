package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Refusal;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class JsonBodiesTest {
  @Test
  void acceptsApplicationJsonWithAnOptionalUtf8CharsetOnly() {
    assertTrue(JsonBodies.isJson("application/json"));
    assertTrue(JsonBodies.isJson("application/json; charset=utf-8"));
    assertTrue(JsonBodies.isJson("Application/JSON;charset=UTF-8"));
    assertTrue(JsonBodies.isJson("application/json; charset=\"utf-8\""));
    assertFalse(JsonBodies.isJson(null));
    assertFalse(JsonBodies.isJson("text/plain"));
    assertFalse(JsonBodies.isJson("application/x-www-form-urlencoded"));
    assertFalse(JsonBodies.isJson("multipart/form-data; boundary=x"));
    assertFalse(JsonBodies.isJson("application/json; charset=latin1"));
    assertFalse(JsonBodies.isJson("application/json; boundary=x"));
    assertFalse(JsonBodies.isJson("application/merge-patch+json"));
    assertFalse(JsonBodies.isJson("text/json+json"));
  }

  private static Refusal refused(byte[] body) {
    return assertThrows(Refusal.class, () -> StrictJson.parseObject(body), new String(body, StandardCharsets.ISO_8859_1));
  }

  private static Refusal refused(String body) {
    return refused(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void strictJsonNamesTheFieldOfEachProblem() {
    assertEquals("telemetry.x", refused("{\"telemetry\":{\"x\":\"a\\u0000b\"}}").errors().get(0).field());
    assertEquals("telemetry", refused("{\"telemetry\":{\"a\\u0000\":1}}").errors().get(0).field());
    assertEquals("telemetry.x", refused("{\"telemetry\":{\"x\":\"\\ud800\"}}").errors().get(0).field());
    assertEquals("tags[1]", refused("{\"tags\":[\"a\",\"\\udc00x\"]}").errors().get(0).field());
    assertEquals("telemetry.n", refused("{\"telemetry\":{\"n\":1e999}}").errors().get(0).field());
    assertEquals("name", refused("{\"name\":1,\"name\":2}").errors().get(0).field());
    assertEquals("a", refused("{\"a\": /* hi */ 1}").errors().get(0).field());
    assertEquals("name", refused("{\"name\": ").errors().get(0).field());
    assertEquals(StrictJson.BODY, refused("{} {}").errors().get(0).field());
    assertEquals(StrictJson.BODY, refused("[1,2]").errors().get(0).field());
    assertEquals(StrictJson.BODY, refused("").errors().get(0).field());
    assertEquals("telemetry[\"a b\"]", refused("{\"telemetry\":{\"a b\":1e999}}").errors().get(0).field());
  }

  @Test
  void strictJsonRefusesEncodingsOtherThanWellFormedUtf8() {
    byte[][] bad = {
        {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, '{', '}'}, // UTF-8 byte order mark
        {(byte) 0xFF, (byte) 0xFE, '{', 0, '}', 0}, // UTF-16LE with its BOM
        {'{', 0, '}'}, // a raw NUL
        {'{', '"', 'a', '"', ':', '"', (byte) 0xC0, (byte) 0xAF, '"', '}'}, // overlong '/'
        {'{', '"', 'a', '"', ':', '"', (byte) 0xE0, (byte) 0x80, (byte) 0xAF, '"', '}'}, // overlong, 3 bytes
        {'{', '"', 'a', '"', ':', '"', (byte) 0xED, (byte) 0xA0, (byte) 0x80, '"', '}'}, // an encoded surrogate
        {'{', '"', 'a', '"', ':', '"', (byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"', '}'}, // above U+10FFFF
        {'{', '"', 'a', '"', ':', '"', (byte) 0xE2, (byte) 0x82, '"', '}'}, // truncated
        {'{', '"', 'a', '"', ':', '"', (byte) 0x80, '"', '}'}, // a stray continuation byte
    };
    for (byte[] b : bad) assertEquals(StrictJson.BODY, refused(b).errors().get(0).field());
    // and what is well-formed passes, whatever the script
    JsonObject ok = StrictJson.parseObject("{\"a\":\"é€😀\",\"n\":1.5e10,\"big\":123456789012345678901234567890}".getBytes(StandardCharsets.UTF_8));
    assertEquals("é€😀", ok.getString("a"));
  }

  @Test
  void strictJsonRefusesNestingBeyond32Levels() {
    assertEquals(32, depthOf(StrictJson.parseObject(("{\"a\":".repeat(31) + "{}" + "}".repeat(31)).getBytes(StandardCharsets.UTF_8))));
    Refusal deep = refused("{\"a\":".repeat(32) + "{}" + "}".repeat(32));
    assertTrue(deep.getMessage().contains("deeper than 32"), deep.getMessage());
    refused("{\"a\":" + "[".repeat(10_000) + "]".repeat(10_000) + "}");
  }

  private static int depthOf(Object o) {
    return o instanceof JsonObject j && !j.isEmpty() ? 1 + depthOf(j.getValue("a")) : 1;
  }

  @Test
  void requestTargetsMustBeCleanlyEncoded() {
    assertNull(RequestTarget.check("/v1/nodes/nd_1", "limit=5&cursor=abc.def&name_prefix=web%2D"));
    assertNull(RequestTarget.check("/v1/nodes", null));
    assertEquals(RequestTarget.PATH, RequestTarget.check("/%zz", null).errors().get(0).field());
    assertEquals(RequestTarget.PATH, RequestTarget.check("/v1/nodes/%00", null).errors().get(0).field());
    assertEquals(RequestTarget.PATH, RequestTarget.check("/v1/nodes/%C0%AF", null).errors().get(0).field());
    assertEquals(RequestTarget.PATH, RequestTarget.check("/healthz%", null).errors().get(0).field());
    assertEquals("limit", RequestTarget.check("/v1/nodes", "limit=%zz").errors().get(0).field());
    assertEquals("limit", RequestTarget.check("/v1/nodes", "limit=1;cursor=x").errors().get(0).field());
    assertEquals("limit", RequestTarget.check("/v1/nodes", "limit=1&limit=2").errors().get(0).field());
    assertEquals("tag", RequestTarget.check("/v1/nodes", "tag=a%0Ab").errors().get(0).field());
    assertEquals(RequestTarget.QUERY, RequestTarget.check("/v1/nodes", "=1").errors().get(0).field());
  }
}
