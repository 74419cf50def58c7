package io.meshplane.backup;

/** What a snapshot command prints of things it did not write itself: names and lines of a snapshot, and error messages. */
final class Printable {
  private static final int MAX = 120;

  private Printable() {}

  static String of(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length() && b.length() < MAX; i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c == 0x7f) b.append(String.format("\\x%02x", (int) c));
      else b.append(c);
    }
    if (b.length() >= MAX && s.length() > MAX) b.append('…');
    return b.toString();
  }

  /** An exception's message for one line of stderr (at most 12 lines): no stack trace. */
  static String message(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().strip();
    String[] lines = m.split("\n");
    return lines.length > 12 ? String.join("\n", java.util.Arrays.copyOf(lines, 12)) + "\n…" : m;
  }
}
