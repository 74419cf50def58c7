package io.meshplane.common;

/**
 * A prefix filter as an index range: the values that start with {@code p} are those from {@code p}
 * (included) up to {@link #upperBound}{@code (p)} (excluded) in byte order, which is code point order
 * for UTF-8, and what PostgreSQL's {@code COLLATE "C"} compares. A B-tree on {@code (column COLLATE "C")}
 * then reads just the matching entries, whatever the database's locale (a {@code LIKE 'p%'} would need
 * the pattern at planning time and a {@code text_pattern_ops} index).
 */
public final class Prefixes {
  /** What {@link #valid} accepts, as a 400's message. */
  public static final String RULE = "must be 1-64 characters, none of them a control character";

  private Prefixes() {}

  /** A name prefix a list accepts: 1 to 64 characters (code points), no control characters. */
  public static boolean valid(String prefix) {
    if (prefix == null || prefix.isEmpty() || prefix.codePointCount(0, prefix.length()) > 64) return false;
    if (prefix.codePoints().anyMatch(c -> Character.isISOControl(c) || Character.getType(c) == Character.SURROGATE)) return false;
    return upperBound(prefix) != null;
  }

  /**
   * The smallest string greater than every string starting with {@code prefix}: the prefix with its last
   * code point incremented (a last code point that cannot grow is dropped first; the surrogate block is
   * skipped). Null when there is none (every string is at least the prefix: no upper bound).
   */
  public static String upperBound(String prefix) {
    String p = prefix;
    while (!p.isEmpty()) {
      int last = p.codePointBefore(p.length());
      String head = p.substring(0, p.length() - Character.charCount(last));
      if (last < Character.MAX_CODE_POINT) {
        int next = last + 1;
        if (next >= Character.MIN_SURROGATE && next <= Character.MAX_SURROGATE) next = Character.MAX_SURROGATE + 1;
        return head + new String(Character.toChars(next));
      }
      p = head;
    }
    return null;
  }
}
