package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

class PageTest {
  static final Cursors CURSORS = new Cursors("0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII));

  @Test
  void aCursorRoundTripsItsKeyForItsOwnList() {
    String c = CURSORS.encode("audit", List.of("2026-11-21T23:19:28.123Z", "ev_1"));
    assertEquals(List.of("2026-11-21T23:19:28.123Z", "ev_1"), CURSORS.decode("audit", c));
  }

  @Test
  void aCursorOfAnotherListAnEditedOneAndAMadeUpOneAre400NamingCursor() {
    String nodes = CURSORS.encode("nodes", List.of("nd_01m8000000000000000000000a"));
    String body = nodes.substring(0, nodes.indexOf('.'));
    String tag = nodes.substring(nodes.indexOf('.') + 1);
    String unsigned = Base64.getUrlEncoder().withoutPadding().encodeToString("[\"nodes\",\"nd_0\"]".getBytes(StandardCharsets.UTF_8));
    String otherKey = new Cursors("fedcba9876543210fedcba9876543210".getBytes(StandardCharsets.US_ASCII))
        .encode("nodes", List.of("nd_01m8000000000000000000000a"));
    for (String[] bad : new String[][] {
        {"tokens", nodes}, // another list
        {"nodes", unsigned}, {"nodes", unsigned + "." + tag}, // edited body, same tag
        {"nodes", body + "." + tag.substring(1)}, {"nodes", body + ".AAAAAAAAAAAAAAAAAAAAAA"}, // bad tags
        {"nodes", otherKey}, // another installation's key
        {"nodes", "%%%"}, {"nodes", "."}, {"nodes", "x".repeat(600)}, {"nodes", "WyJub2RlcyJd.e30"}}) {
      Refusal e = assertThrows(Refusal.class, () -> CURSORS.decode(bad[0], bad[1]), bad[1]);
      assertEquals(Refusal.Kind.INVALID, e.kind());
      assertEquals("cursor", e.errors().get(0).field());
    }
  }

  @Test
  void thePageHoldsLimitItemsAndPointsAfterTheLastOne() {
    Page p = new Page(2, null, CURSORS, "nodes");
    JsonObject r = p.respond(List.of("a", "b", "c"), s -> new JsonObject().put("id", s), s -> List.of(s));
    assertEquals(2, r.getJsonArray("items").size());
    assertEquals(List.of("b"), CURSORS.decode("nodes", r.getString("next_cursor")));
    JsonObject last = p.respond(List.of("c"), s -> new JsonObject().put("id", s), s -> List.of(s));
    assertNull(last.getString("next_cursor"));
  }

  @Test
  void limitTakesAsciiDigitsOnly() {
    assertEquals(10, Params.digits("10"));
    assertEquals(10, Params.digits("010"));
    for (String bad : new String[] {"１０", "+1", "-1", " 1", "1e2", "0x10", "", "9999999999", "١٠"}) {
      assertEquals(-1, Params.digits(bad), bad);
    }
  }
}
