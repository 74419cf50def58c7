package io.meshplane.common;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** What a name filter accepts: a whole name of 1 to 64 characters, no control characters. */
class NameFilterTest {
  @Test
  void aNameOfOneToSixtyFourCharactersWithoutControlCharacters() {
    assertTrue(NameFilter.valid("web-1"));
    assertTrue(NameFilter.valid("a"));
    assertTrue(NameFilter.valid("é".repeat(64)), "characters, not bytes");
    assertTrue(NameFilter.valid(new String(Character.toChars(0x1F600)).repeat(64)), "code points, not chars");
    assertFalse(NameFilter.valid(null));
    assertFalse(NameFilter.valid(""));
    assertFalse(NameFilter.valid("a".repeat(65)));
    assertFalse(NameFilter.valid("web\n1"));
    assertFalse(NameFilter.valid("web\u00851"), "C1 control");
    assertFalse(NameFilter.valid("web\ud8001"), "lone surrogate");
  }
}
