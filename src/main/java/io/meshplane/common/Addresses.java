package io.meshplane.common;

import io.netty.util.NetUtil;

/**
 * IP addresses in their usual written form: IPv6 compressed as RFC 5952 says ({@code ::1}, not
 * {@code 0:0:0:0:0:0:0:1}), an IPv4-mapped IPv6 address as the IPv4 address it maps
 * ({@code ::ffff:192.0.2.7} is {@code 192.0.2.7}). The audit trail records addresses in this form, and
 * shows rows recorded before in it too. Only literals are parsed: no name lookups.
 */
public final class Addresses {
  private Addresses() {}

  /** The usual form of {@code address}; anything that is not an IP literal (or null) is returned as it is. */
  public static String canonical(String address) {
    if (address == null || address.isEmpty()) return address;
    String literal = address;
    if (literal.length() > 2 && literal.charAt(0) == '[' && literal.charAt(literal.length() - 1) == ']') {
      literal = literal.substring(1, literal.length() - 1);
    }
    int zone = literal.indexOf('%');
    String scope = zone < 0 ? "" : literal.substring(zone);
    byte[] ip = NetUtil.createByteArrayFromIpAddressString(zone < 0 ? literal : literal.substring(0, zone));
    if (ip == null) return address;
    if (ip.length == 16 && mappedV4(ip)) {
      return (ip[12] & 0xff) + "." + (ip[13] & 0xff) + "." + (ip[14] & 0xff) + "." + (ip[15] & 0xff);
    }
    return NetUtil.bytesToIpAddress(ip) + (ip.length == 16 ? scope : "");
  }

  private static boolean mappedV4(byte[] ip) {
    for (int i = 0; i < 10; i++) if (ip[i] != 0) return false;
    return ip[10] == (byte) 0xff && ip[11] == (byte) 0xff;
  }
}
