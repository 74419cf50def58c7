package io.meshplane.common;

/**
 * A filter on a whole name (the audit trail's actor name, a node event's node name): matched exactly,
 * case-sensitive, against a byte-wise ({@code COLLATE "C"}) index whose order after the name is the
 * list's order, so a page reads its rows and no others (V16, V18). Not a prefix: a prefix is a range
 * of that index whose rows come out in name order, so PostgreSQL either reads every match and sorts
 * them or walks the time order until a page of matches turns up, and some prefix makes either cost the
 * whole log (load-tests/RESULTS.md, "The logs people read: name filters with real names").
 */
public final class NameFilter {
  /** What {@link #valid} accepts, as a 400's message. */
  public static final String RULE = "must be a whole name: 1-64 characters, none of them a control character";

  private NameFilter() {}

  /** A name a list filters by: 1 to 64 characters (code points), no control characters, no lone surrogates. */
  public static boolean valid(String name) {
    if (name == null || name.isEmpty() || name.codePointCount(0, name.length()) > 64) return false;
    return name.codePoints().noneMatch(c -> Character.isISOControl(c) || Character.getType(c) == Character.SURROGATE);
  }
}
