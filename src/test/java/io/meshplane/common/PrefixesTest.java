package io.meshplane.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** A name prefix as an index range: every string that starts with the prefix lies below the bound, in byte order. */
class PrefixesTest {
  @Test
  void theBoundIsThePrefixWithItsLastCharacterIncremented() {
    assertEquals("ops.", Prefixes.upperBound("ops-"));
    assertEquals("b", Prefixes.upperBound("a"));
    assertEquals("z{", Prefixes.upperBound("zz"));
    assertEquals("\ue000", Prefixes.upperBound("\ud7ff"), "the surrogate block is skipped");
    assertEquals("a\ud800\udc00", Prefixes.upperBound("a\uffff"), "past the BMP");
    assertEquals("b", Prefixes.upperBound("a" + new String(Character.toChars(Character.MAX_CODE_POINT))), "a last code point that cannot grow");
    assertNull(Prefixes.upperBound(new String(Character.toChars(Character.MAX_CODE_POINT))));
  }

  @Test
  void everyStringStartingWithThePrefixLiesInTheRangeInByteOrder() {
    String prefix = "web-é";
    String bound = Prefixes.upperBound(prefix);
    for (String s : new String[] {"web-é", "web-é1", "web-é\uffff\uffff", "web-é" + new String(Character.toChars(0x1F600))}) {
      assertTrue(bytes(s, prefix) >= 0 && bytes(s, bound) < 0, s);
    }
    for (String s : new String[] {"web-e", "web-f", "web-ê", "web"}) {
      assertFalse(bytes(s, prefix) >= 0 && bytes(s, bound) < 0, s);
    }
  }

  @Test
  void aPrefixIsOneTo64PrintableCharacters() {
    assertTrue(Prefixes.valid("ops-"));
    assertTrue(Prefixes.valid("é".repeat(64)));
    assertFalse(Prefixes.valid(""));
    assertFalse(Prefixes.valid("a".repeat(65)));
    assertFalse(Prefixes.valid("a\u0000"));
    assertFalse(Prefixes.valid("a\n"));
  }

  private static int bytes(String a, String b) {
    return Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }
}
