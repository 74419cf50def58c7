package io.meshplane.node;

import io.meshplane.common.Ports;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Base64;
import java.util.regex.Pattern;

/** The formats of node data (API.md §8, §1), checked strictly and without any DNS lookup. */
public final class NodeFormats {
  private static final Pattern DNS_LABEL = Pattern.compile("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");
  private static final Pattern TAG = Pattern.compile("^tag:[a-z0-9][a-z0-9-]{0,62}$");
  private static final Pattern IPV6_CHARS = Pattern.compile("^[0-9a-fA-F:.]{2,45}$");
  private static final Pattern SERVICE = Pattern.compile("^([a-z0-9][a-z0-9-]{0,62}):([0-9]{1,5})$");

  private NodeFormats() {}

  public static boolean name(String s) {
    return s != null && DNS_LABEL.matcher(s).matches();
  }

  public static boolean tag(String s) {
    return s != null && TAG.matcher(s).matches();
  }

  /**
   * A node's tags as a request gives them ({@code v}: the JSON value, null = none): an array of at most
   * 32 {@code tag:<slug>}, duplicates dropped; errors go to {@code f} named {@code field}
   * ({@code field[i]} for one tag).
   */
  public static String[] tags(io.meshplane.common.Fields f, Object v, String field) {
    if (v == null) return new String[0];
    if (!(v instanceof io.vertx.core.json.JsonArray a) || a.size() > 32) {
      f.error(field, "must be an array of at most 32 tags");
      return new String[0];
    }
    java.util.Set<String> out = new java.util.LinkedHashSet<>();
    for (int i = 0; i < a.size(); i++) {
      Object t = a.getValue(i);
      if (!(t instanceof String s) || !tag(s)) {
        f.error(field + "[" + i + "]", "must be tag:<slug>");
        return new String[0];
      }
      out.add(s);
    }
    return out.toArray(new String[0]);
  }

  /** A WireGuard-style public key: base64 of exactly 32 bytes. */
  public static boolean publicKey(String s) {
    if (s == null || s.length() != 44) return false;
    try {
      return Base64.getDecoder().decode(s).length == 32;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * {@code 198.51.100.7:41641} or {@code [2001:db8::1]:41641}. On the heartbeat path: IPv4 and the port
   * are parsed by hand, without a regex or a substring.
   */
  public static boolean endpoint(String s) {
    if (s == null || s.length() > 60) return false;
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || !port(s, colon + 1, s.length())) return false;
    if (s.charAt(0) == '[') return colon >= 3 && s.charAt(colon - 1) == ']' && ipv6(s.substring(1, colon - 1));
    return ipv4(s, 0, colon) >= 0;
  }

  /** A CIDR prefix with no host bits set: {@code 10.1.0.0/24}, {@code fd00::/64}. */
  public static boolean cidr(String s) {
    if (s == null || s.length() > 50) return false;
    int slash = s.indexOf('/');
    if (slash <= 0) return false;
    int bits = decimal(s, slash + 1, s.length(), 3);
    if (bits < 0) return false;
    long v4 = ipv4(s, 0, slash);
    if (v4 >= 0) return bits <= 32 && (bits == 32 || (v4 & ((1L << (32 - bits)) - 1)) == 0);
    String addr = s.substring(0, slash);
    if (!ipv6(addr)) return false;
    byte[] raw = literal(addr);
    if (raw == null || bits > raw.length * 8) return false;
    for (int i = bits; i < raw.length * 8; i++) {
      if ((raw[i / 8] & (0x80 >> (i % 8))) != 0) return false;
    }
    return true;
  }

  /** A DNS host name: dot-separated DNS labels, at most 253 characters ({@code web.example.net}). */
  public static boolean hostname(String s) {
    if (s == null || s.isEmpty() || s.length() > 253) return false;
    for (String label : s.split("\\.", -1)) if (!name(label)) return false;
    return true;
  }

  /** {@code ssh:22}; the port as {@link Ports} reads it ({@code ssh:022} is refused, as in policy ports). */
  public static boolean service(String s) {
    if (s == null) return false;
    var m = SERVICE.matcher(s);
    return m.matches() && port(m.group(2));
  }

  static boolean port(String s) {
    return port(s, 0, s.length());
  }

  /** A port 1-65535 in {@code s[from, to)}: ASCII digits without a leading zero ({@link Ports}). */
  static boolean port(String s, int from, int to) {
    return Ports.parse(s, from, to) > 0;
  }

  static boolean ipv4(String s) {
    return ipv4(s, 0, s.length()) >= 0;
  }

  /**
   * The IPv4 address in {@code s[from, to)} as an unsigned 32-bit value, or -1: exactly four decimal
   * parts of 1-3 ASCII digits, each 0-255, no leading zero (so no octal reading is possible).
   */
  public static long ipv4(String s, int from, int to) {
    long value = 0;
    int i = from;
    for (int part = 0; part < 4; part++) {
      if (part > 0) {
        if (i >= to || s.charAt(i) != '.') return -1;
        i++;
      }
      int start = i;
      int n = 0;
      while (i < to && i - start < 3) {
        char c = s.charAt(i);
        if (c < '0' || c > '9') break;
        n = n * 10 + (c - '0');
        i++;
      }
      int len = i - start;
      if (len == 0 || n > 255 || (len > 1 && s.charAt(start) == '0')) return -1;
      value = (value << 8) | n;
    }
    return i == to ? value : -1;
  }

  /** The decimal number in {@code s[from, to)} (1 to maxDigits ASCII digits, no sign), or -1. */
  private static int decimal(String s, int from, int to, int maxDigits) {
    if (to <= from || to - from > maxDigits) return -1;
    int n = 0;
    for (int i = from; i < to; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') return -1;
      n = n * 10 + (c - '0');
    }
    return n;
  }

  static boolean ipv6(String s) {
    if (!IPV6_CHARS.matcher(s).matches() || !s.contains(":")) return false;
    byte[] raw = literal(s);
    return raw != null && raw.length == 16;
  }

  /** Parses an address literal; only called on strings already known to be literals, so no lookup happens. */
  private static byte[] literal(String s) {
    try {
      return InetAddress.getByName(s).getAddress();
    } catch (UnknownHostException e) {
      return null;
    }
  }
}
