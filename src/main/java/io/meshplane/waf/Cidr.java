package io.meshplane.waf;

/**
 * A CIDR block ({@code 10.0.0.0/8}, {@code 2001:db8::/32}, or a single address without a prefix
 * length), parsed once when a policy compiles. An IPv4-mapped IPv6 address counts as its IPv4 address;
 * an IPv4 address is never in an IPv6 block nor the reverse.
 */
final class Cidr {
  private final byte[] network;
  private final int bits;

  private Cidr(byte[] network, int bits) {
    this.network = network;
    this.bits = bits;
  }

  /** The block, or an {@link IllegalArgumentException} saying why {@code text} is not one. */
  static Cidr parse(String text) {
    int slash = text.indexOf('/');
    byte[] ip = UrlText.ipBytes(slash < 0 ? text : text.substring(0, slash));
    if (ip == null) throw new IllegalArgumentException("\"" + text + "\" is not an IP address or CIDR block");
    int bits = ip.length * 8;
    if (slash >= 0) {
      String len = text.substring(slash + 1);
      if (len.isEmpty() || len.length() > 3 || !len.chars().allMatch(Character::isDigit)) {
        throw new IllegalArgumentException("\"" + text + "\": the prefix length is not a number");
      }
      bits = Integer.parseInt(len);
      if (bits > ip.length * 8) throw new IllegalArgumentException("\"" + text + "\": prefix length over " + ip.length * 8);
    }
    for (int i = 0; i < ip.length * 8; i++) {
      if (i >= bits && (ip[i / 8] & (0x80 >> (i % 8))) != 0) {
        throw new IllegalArgumentException("\"" + text + "\": host bits set past the prefix length");
      }
    }
    return new Cidr(ip, bits);
  }

  boolean contains(String address) {
    byte[] ip = UrlText.ipBytes(address);
    if (ip == null || ip.length != network.length) return false;
    int full = bits / 8;
    for (int i = 0; i < full; i++) if (ip[i] != network[i]) return false;
    int rest = bits % 8;
    if (rest == 0) return true;
    int mask = (0xff << (8 - rest)) & 0xff;
    return (ip[full] & mask) == (network[full] & mask);
  }
}
