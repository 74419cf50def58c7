package io.meshplane.backup;

/** Text from a snapshot (a file name, a line of the dump) made safe to print: no control characters, bounded. */
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
}
