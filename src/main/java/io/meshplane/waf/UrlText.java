package io.meshplane.waf;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The text forms of a request target the rules see: percent-decoding (once, lossy UTF-8), the
 * normalised path (RFC 3986 §5.2.4 dot segments removed, duplicate slashes collapsed) and IP literals
 * (parsed by hand: never a name lookup). Pure functions, no state.
 */
final class UrlText {
  private UrlText() {}

  /**
   * Percent-decodes {@code s} once; a {@code %} not followed by two hex digits stays as it is (and
   * {@code malformed[0]} is set when given). Bytes are read as UTF-8, an invalid sequence becoming
   * U+FFFD. With {@code plusIsSpace} (a query or form value) {@code +} is a space.
   */
  static String decode(String s, boolean plusIsSpace, boolean[] malformed) {
    if (s.indexOf('%') < 0 && (!plusIsSpace || s.indexOf('+') < 0)) return s;
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length() && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
        out.write(hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2)));
        i += 2;
      } else if (c == '+' && plusIsSpace) {
        out.write(' ');
      } else {
        if (c == '%' && malformed != null) malformed[0] = true;
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        if (Character.isHighSurrogate(c) && i + 1 < s.length()) {
          b = s.substring(i, i + 2).getBytes(StandardCharsets.UTF_8);
          i++;
        }
        out.write(b, 0, b.length);
      }
    }
    return utf8Lossy(out.toByteArray(), 0, out.size());
  }

  /** {@code b[from, to)} as UTF-8, each invalid sequence (a cut one at the end included) becoming U+FFFD. */
  static String utf8Lossy(byte[] b, int from, int to) {
    CharsetDecoder d = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
        .onUnmappableCharacter(CodingErrorAction.REPLACE);
    try {
      return d.decode(ByteBuffer.wrap(b, from, to - from)).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalStateException(e); // REPLACE never throws
    }
  }

  private static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  /**
   * The path a rule matches against what the upstream will serve: decoded once, duplicate slashes
   * collapsed, dot segments removed (RFC 3986 §5.2.4), never empty ({@code /}). A path decoded twice
   * ({@code %252e}) keeps its second layer: rules that care look at {@code request.path} too.
   */
  static String normalizePath(String rawPath, boolean[] malformed) {
    String decoded = decode(rawPath, false, malformed);
    StringBuilder collapsed = new StringBuilder(decoded.length());
    for (int i = 0; i < decoded.length(); i++) {
      char c = decoded.charAt(i);
      if (c == '/' && collapsed.length() > 0 && collapsed.charAt(collapsed.length() - 1) == '/') continue;
      collapsed.append(c);
    }
    String out = removeDotSegments(collapsed.toString());
    return out.isEmpty() ? "/" : out;
  }

  /** RFC 3986 §5.2.4, step by step (A to E) over an input buffer and an output buffer. */
  static String removeDotSegments(String path) {
    String in = path;
    StringBuilder out = new StringBuilder(path.length());
    while (!in.isEmpty()) {
      if (in.startsWith("../")) {
        in = in.substring(3); // A
      } else if (in.startsWith("./")) {
        in = in.substring(2); // A
      } else if (in.startsWith("/./")) {
        in = in.substring(2); // B
      } else if (in.equals("/.")) {
        in = "/"; // B
      } else if (in.startsWith("/../")) {
        in = in.substring(3); // C
        dropLastSegment(out);
      } else if (in.equals("/..")) {
        in = "/"; // C
        dropLastSegment(out);
      } else if (in.equals(".") || in.equals("..")) {
        in = ""; // D
      } else {
        int next = in.indexOf('/', in.charAt(0) == '/' ? 1 : 0); // E
        if (next < 0) next = in.length();
        out.append(in, 0, next);
        in = in.substring(next);
      }
    }
    return out.toString();
  }

  private static void dropLastSegment(StringBuilder out) {
    int slash = out.lastIndexOf("/");
    out.setLength(Math.max(slash, 0));
  }

  /** The 4 or 16 bytes of an IPv4 or IPv6 literal (brackets and a zone allowed), or null. */
  static byte[] ipBytes(String s) {
    if (s == null || s.isEmpty() || s.length() > 64) return null;
    String t = s;
    if (t.startsWith("[") && t.endsWith("]")) t = t.substring(1, t.length() - 1);
    int zone = t.indexOf('%');
    if (zone >= 0) t = t.substring(0, zone);
    if (t.indexOf(':') < 0) return ipv4(t);
    byte[] v6 = ipv6(t);
    if (v6 != null && mappedV4(v6)) return new byte[] {v6[12], v6[13], v6[14], v6[15]};
    return v6;
  }

  private static boolean mappedV4(byte[] ip) {
    for (int i = 0; i < 10; i++) if (ip[i] != 0) return false;
    return ip[10] == (byte) 0xff && ip[11] == (byte) 0xff;
  }

  private static byte[] ipv4(String s) {
    String[] parts = s.split("\\.", -1);
    if (parts.length != 4) return null;
    byte[] b = new byte[4];
    for (int i = 0; i < 4; i++) {
      String p = parts[i];
      if (p.isEmpty() || p.length() > 3 || (p.length() > 1 && p.charAt(0) == '0')) return null;
      int v = 0;
      for (int k = 0; k < p.length(); k++) {
        char c = p.charAt(k);
        if (c < '0' || c > '9') return null;
        v = v * 10 + (c - '0');
      }
      if (v > 255) return null;
      b[i] = (byte) v;
    }
    return b;
  }

  private static byte[] ipv6(String s) {
    int gap = s.indexOf("::");
    if (gap >= 0 && s.indexOf("::", gap + 1) >= 0) return null;
    String head = gap >= 0 ? s.substring(0, gap) : s;
    String tail = gap >= 0 ? s.substring(gap + 2) : "";
    int[] h = groups(head);
    int[] t = groups(tail);
    if (h == null || t == null) return null;
    int total = h.length + t.length;
    if (gap < 0 ? total != 8 : total > 7) return null;
    byte[] b = new byte[16];
    for (int i = 0; i < h.length; i++) put(b, i, h[i]);
    for (int i = 0; i < t.length; i++) put(b, 8 - t.length + i, t[i]);
    return b;
  }

  private static void put(byte[] b, int group, int v) {
    b[group * 2] = (byte) (v >> 8);
    b[group * 2 + 1] = (byte) v;
  }

  /** 16-bit groups of one side of {@code ::}; a trailing dotted IPv4 counts as two. */
  private static int[] groups(String s) {
    if (s.isEmpty()) return new int[0];
    String[] parts = s.split(":", -1);
    int n = parts.length;
    byte[] v4 = parts[n - 1].indexOf('.') >= 0 ? ipv4(parts[n - 1]) : null;
    if (parts[n - 1].indexOf('.') >= 0 && v4 == null) return null;
    int[] out = new int[v4 == null ? n : n + 1];
    for (int i = 0; i < (v4 == null ? n : n - 1); i++) {
      String p = parts[i];
      if (p.isEmpty() || p.length() > 4) return null;
      int v = 0;
      for (int k = 0; k < p.length(); k++) {
        int d = hex(p.charAt(k));
        if (d < 0) return null;
        v = v * 16 + d;
      }
      out[i] = v;
    }
    if (v4 != null) {
      out[n - 1] = (v4[0] & 0xff) << 8 | (v4[1] & 0xff);
      out[n] = (v4[2] & 0xff) << 8 | (v4[3] & 0xff);
    }
    return out;
  }
}
