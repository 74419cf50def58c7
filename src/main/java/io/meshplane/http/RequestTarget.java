package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.meshplane.common.Utf8;
import java.util.HashSet;
import java.util.Set;

/**
 * Checks the request target (path and query string) before any routing: Vert.x Web answers a path
 * with bad percent-encoding ({@code /%zz}) with a 500, splits query strings at {@code ;} as well as
 * {@code &}, and keeps the first of two equal parameters without a word. Here the target must be
 * printable ASCII, every {@code %} must start a valid escape, what the escapes decode to must be
 * well-formed UTF-8 without control characters, {@code ;} must not appear in the query, and each query
 * parameter may be given once. A bad target is a 400 naming the part ({@code (path)}, the parameter, or
 * {@code (query)}). Cost on the hot path: one scan of the target's characters.
 */
final class RequestTarget {
  public static final String PATH = "(path)";
  public static final String QUERY = "(query)";

  private RequestTarget() {}

  /** The problem with this target, or null when it is acceptable. */
  public static Refusal check(String path, String query) {
    if (path != null) {
      String why = component(path, 0, path.length(), false);
      if (why != null) return Refusal.invalid(PATH, why);
    }
    if (query == null || query.isEmpty()) return null;
    Set<String> seen = null;
    int start = 0;
    while (start <= query.length()) {
      int amp = query.indexOf('&', start);
      int end = amp < 0 ? query.length() : amp;
      if (end > start) {
        int eq = query.indexOf('=', start);
        int nameEnd = eq < 0 || eq > end ? end : eq;
        String why = component(query, start, nameEnd, true);
        if (why != null) return Refusal.invalid(QUERY, "a parameter name " + why);
        String name = decode(query, start, nameEnd);
        if (name.isEmpty()) return Refusal.invalid(QUERY, "has a parameter without a name");
        String field = printable(name) ? name : QUERY;
        if (nameEnd < end) {
          why = component(query, nameEnd + 1, end, true);
          if (why != null) return Refusal.invalid(field, why);
        }
        if (seen == null) seen = new HashSet<>();
        if (!seen.add(name)) return Refusal.invalid(field, "is given more than once");
      }
      if (amp < 0) break;
      start = amp + 1;
    }
    return null;
  }

  /**
   * Why {@code s[from, to)} is not an acceptable path or query component, or null. Query components may
   * hold '+' (a space) but never ';', which some decoders treat as a separator.
   */
  private static String component(String s, int from, int to, boolean query) {
    byte[] decoded = null;
    int n = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c <= 0x20 || c >= 0x7f) return "must be printable ASCII (percent-encode anything else)";
      if (query && c == ';') return "must not contain ';' (use '&' between parameters, or %3B inside a value)";
      if (c == '%') {
        if (i + 2 >= to || hex(s.charAt(i + 1)) < 0 || hex(s.charAt(i + 2)) < 0) return "has a '%' that does not start a %XX escape";
        if (decoded == null) decoded = new byte[to - from];
        int v = hex(s.charAt(i + 1)) << 4 | hex(s.charAt(i + 2));
        if (v < 0x20 || v == 0x7f) return "must not encode control characters";
        decoded[n++] = (byte) v;
        i += 2;
      } else if (decoded != null) {
        decoded[n++] = (byte) c;
      }
    }
    if (decoded != null && Utf8.firstInvalid(decoded, 0, n) >= 0) return "must decode to UTF-8";
    return null;
  }

  private static String decode(String s, int from, int to) {
    if (s.indexOf('%', from) < 0 || s.indexOf('%', from) >= to) return s.substring(from, to).replace('+', ' ');
    byte[] out = new byte[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c == '%') {
        out[n++] = (byte) (hex(s.charAt(i + 1)) << 4 | hex(s.charAt(i + 2)));
        i += 2;
      } else {
        out[n++] = (byte) (c == '+' ? ' ' : c);
      }
    }
    return new String(out, 0, n, java.nio.charset.StandardCharsets.UTF_8);
  }

  private static boolean printable(String name) {
    if (name.length() > 64) return false;
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c < 0x21 || c > 0x7e) return false;
    }
    return true;
  }

  private static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
}
