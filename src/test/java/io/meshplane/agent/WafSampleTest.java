package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

/** What a denied request's sample keeps (API.md §20, "Samples"): nothing that carries a credential, everything bounded. */
class WafSampleTest {
  @Test
  void credentialsAndSessionsNeverLeaveTheEdgeAndEverythingIsCut() {
    MultiMap h = MultiMap.caseInsensitiveMultiMap().add("Cookie", "session=abc").add("Authorization", "Bearer sekrit")
        .add("Proxy-Authorization", "Basic x").add("X-Api-Key", "k-123").add("X-Auth-Token", "t-1").add("X-Session-Id", "s-1")
        .add("User-Agent", "curl/8\r\nInjected: yes").add("Referer", "r".repeat(500));
    for (int i = 0; i < 20; i++) h.add("X-Extra-" + i, "v");
    JsonObject s = WafSample.of("ir_x", "mp-xss-001", "deny", 403, "GET", "/search?q=<script>&token=abc&api_key=def&page=2" + "x".repeat(600), h,
        "192.0.2.7", Buffer.buffer("b".repeat(1000)));
    String all = s.encode();
    for (String secret : new String[] {"session=abc", "sekrit", "Basic x", "k-123", "t-1", "s-1", "token=abc", "api_key=def"}) {
      assertFalse(all.contains(secret), secret + " left the edge: " + all);
    }
    JsonObject r = s.getJsonObject("request");
    assertTrue(r.getString("target").startsWith("/search?q=<script>&token=[redacted]&api_key=[redacted]&page=2"), r.getString("target"));
    assertEquals(WafSample.TARGET, r.getString("target").length());
    assertEquals(WafSample.BODY, r.getString("body").length());
    assertEquals(WafSample.HEADERS, r.getJsonArray("headers").size());
    assertEquals("curl/8  Injected: yes", r.getJsonArray("headers").getJsonArray(0).getString(1), "control characters as spaces");
    assertEquals(WafSample.VALUE, r.getJsonArray("headers").getJsonArray(1).getString(1).length());
    assertNull(WafSample.of("ir_x", "r", "deny", 403, "GET", "/", MultiMap.caseInsensitiveMultiMap(), "", Buffer.buffer())
        .getJsonObject("request").getString("body"));
  }
}
