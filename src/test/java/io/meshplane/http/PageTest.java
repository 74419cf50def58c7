package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

class PageTest {
  @Test
  void aCursorRoundTripsItsKey() {
    String c = Page.encode(List.of("2026-11-21T23:19:28.123Z", "ev_1"));
    assertEquals(List.of("2026-11-21T23:19:28.123Z", "ev_1"), Page.decode(c));
  }

  @Test
  void aForgedCursorIs400NamingCursor() {
    for (String bad : new String[] {"%%%", "e30", "W10", "WzFd", "x".repeat(600)}) {
      ApiError e = assertThrows(ApiError.class, () -> Page.decode(bad), bad);
      assertEquals(400, e.status());
      assertEquals("cursor", e.errors().get(0).field());
    }
  }

  @Test
  void thePageHoldsLimitItemsAndPointsAfterTheLastOne() {
    Page p = new Page(2, null);
    JsonObject r = p.respond(List.of("a", "b", "c"), s -> new JsonObject().put("id", s), s -> List.of(s));
    assertEquals(2, r.getJsonArray("items").size());
    assertEquals(List.of("b"), Page.decode(r.getString("next_cursor")));
    JsonObject last = p.respond(List.of("c"), s -> new JsonObject().put("id", s), s -> List.of(s));
    assertNull(last.getString("next_cursor"));
  }
}
