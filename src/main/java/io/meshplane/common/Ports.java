package io.meshplane.common;

/**
 * Port numbers written as text, read the one way every parser of this code base reads them: 1 to 5
 * ASCII digits, no sign, no leading zero, 1-65535. So a port has exactly one spelling ({@code ssh:22},
 * never {@code ssh:022}), and no fullwidth or other Unicode digit gets in ({@code Integer.parseInt}
 * takes those, and a sign).
 */
public final class Ports {
  private Ports() {}

  /** The port in {@code s}, or -1. */
  public static int parse(String s) {
    return s == null ? -1 : parse(s, 0, s.length());
  }

  /** The port in {@code s[from, to)}, or -1. */
  public static int parse(String s, int from, int to) {
    if (to <= from || to - from > 5 || s.charAt(from) == '0') return -1;
    int n = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') return -1;
      n = n * 10 + (c - '0');
    }
    return n <= 65535 ? n : -1;
  }

  /** As {@link #parse(String)}, and also {@code 0} (where a setting means "any free port"). */
  public static int parseOrZero(String s) {
    return "0".equals(s) ? 0 : parse(s);
  }
}
