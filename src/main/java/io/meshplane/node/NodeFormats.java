package io.meshplane.node;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Base64;
import java.util.regex.Pattern;

/** The formats of node data (SPEC §4, §9), checked strictly and without any DNS lookup. */
public final class NodeFormats {
  private static final Pattern DNS_LABEL = Pattern.compile("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");
  private static final Pattern TAG = Pattern.compile("^tag:[a-z0-9][a-z0-9-]{0,62}$");
  private static final Pattern IPV4 = Pattern.compile("^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})$");
  private static final Pattern IPV6_CHARS = Pattern.compile("^[0-9a-fA-F:.]{2,45}$");
  private static final Pattern SERVICE = Pattern.compile("^([a-z0-9][a-z0-9-]{0,62}):(\\d{1,5})$");

  private NodeFormats() {}

  public static boolean name(String s) {
    return s != null && DNS_LABEL.matcher(s).matches();
  }

  public static boolean tag(String s) {
    return s != null && TAG.matcher(s).matches();
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

  /** {@code 198.51.100.7:41641} or {@code [2001:db8::1]:41641}. */
  public static boolean endpoint(String s) {
    if (s == null || s.length() > 60) return false;
    int colon = s.lastIndexOf(':');
    if (colon <= 0 || !port(s.substring(colon + 1))) return false;
    String host = s.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) return ipv6(host.substring(1, host.length() - 1));
    return ipv4(host);
  }

  /** A CIDR prefix with no host bits set: {@code 10.1.0.0/24}, {@code fd00::/64}. */
  public static boolean cidr(String s) {
    if (s == null || s.length() > 50) return false;
    int slash = s.indexOf('/');
    if (slash <= 0) return false;
    String addr = s.substring(0, slash);
    int bits;
    try {
      bits = Integer.parseInt(s.substring(slash + 1));
    } catch (NumberFormatException e) {
      return false;
    }
    byte[] raw;
    if (ipv4(addr)) raw = literal(addr);
    else if (ipv6(addr)) raw = literal(addr);
    else return false;
    if (raw == null || bits < 0 || bits > raw.length * 8) return false;
    for (int i = bits; i < raw.length * 8; i++) {
      if ((raw[i / 8] & (0x80 >> (i % 8))) != 0) return false;
    }
    return true;
  }

  /** {@code ssh:22}. */
  public static boolean service(String s) {
    if (s == null) return false;
    var m = SERVICE.matcher(s);
    return m.matches() && port(m.group(2));
  }

  static boolean port(String s) {
    if (s.isEmpty() || s.length() > 5 || !s.chars().allMatch(Character::isDigit)) return false;
    int p = Integer.parseInt(s);
    return p >= 1 && p <= 65535;
  }

  static boolean ipv4(String s) {
    var m = IPV4.matcher(s);
    if (!m.matches()) return false;
    for (int i = 1; i <= 4; i++) {
      String g = m.group(i);
      if (Integer.parseInt(g) > 255 || (g.length() > 1 && g.startsWith("0"))) return false;
    }
    return true;
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
