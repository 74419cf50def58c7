package io.meshplane.http;

import io.meshplane.common.Addresses;
import io.netty.util.NetUtil;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.List;

/**
 * Who a request really comes from, behind the proxies the operator trusts ({@code http.trusted_proxies}):
 * the TCP peer, unless that peer is a trusted proxy and the request says {@code X-Forwarded-For}; then
 * the header is read from the right (the entry the nearest proxy appended) past every trusted address,
 * and the first address that is not trusted is the client. Nobody else's header is believed: a client
 * that talks to a replica directly cannot choose its own address. An entry that is not an IP literal
 * stops the walk (the last address before it counts). Only IP literals are parsed: no name lookups.
 *
 * <p>The address is what the audit trail records as {@code source_ip} and what the panel's per-address
 * login limits count, on both APIs.
 */
public final class ClientAddresses {
  /** The routing context key of the resolved address. */
  static final String KEY = "meshplane.client-address";
  /** Entries of X-Forwarded-For looked at, at most (the header is bounded by the header limit anyway). */
  private static final int MAX_HOPS = 32;
  public static final ClientAddresses NONE = new ClientAddresses(List.of());

  private record Cidr(byte[] network, int bits) {
    boolean contains(byte[] a) {
      if (a.length != network.length) return false;
      int full = bits / 8;
      for (int i = 0; i < full; i++) if (a[i] != network[i]) return false;
      int rest = bits % 8;
      if (rest == 0) return true;
      int mask = (0xff << (8 - rest)) & 0xff;
      return (a[full] & mask) == (network[full] & mask);
    }
  }

  private final List<Cidr> trusted;

  private ClientAddresses(List<Cidr> trusted) {
    this.trusted = trusted;
  }

  /**
   * From {@code http.trusted_proxies}: IP addresses or CIDR blocks, IPv4 or IPv6.
   *
   * @throws IllegalArgumentException naming the entry that is neither
   */
  public static ClientAddresses of(List<String> entries) {
    List<Cidr> out = new ArrayList<>();
    for (String e : entries) {
      int slash = e.indexOf('/');
      byte[] ip = NetUtil.createByteArrayFromIpAddressString(slash < 0 ? e : e.substring(0, slash));
      if (ip == null) throw new IllegalArgumentException("'" + e + "' is not an IP address or CIDR block");
      int bits = ip.length * 8;
      if (slash >= 0) {
        try {
          bits = Integer.parseInt(e.substring(slash + 1));
        } catch (NumberFormatException x) {
          throw new IllegalArgumentException("'" + e + "' has no prefix length after '/'");
        }
        if (bits < 0 || bits > ip.length * 8) throw new IllegalArgumentException("'" + e + "' has a prefix length out of range");
      }
      out.add(new Cidr(ip, bits));
    }
    return new ClientAddresses(List.copyOf(out));
  }

  public boolean any() {
    return !trusted.isEmpty();
  }

  /**
   * The client's address for a request from {@code peer} carrying {@code forwardedFor} (null when absent),
   * in its usual form ({@link Addresses#canonical}: {@code ::1}, an IPv4-mapped address as IPv4).
   */
  public String resolve(String peer, String forwardedFor) {
    return walk(Addresses.canonical(peer), forwardedFor);
  }

  private String walk(String peer, String forwardedFor) {
    if (trusted.isEmpty() || forwardedFor == null || peer == null || !isTrusted(peer)) return peer;
    String[] hops = forwardedFor.split(",", -1);
    String client = peer;
    for (int i = hops.length - 1, seen = 0; i >= 0 && seen < MAX_HOPS; i--, seen++) {
      String hop = Addresses.canonical(hops[i].trim());
      byte[] ip = NetUtil.createByteArrayFromIpAddressString(hop);
      if (ip == null) return client;
      client = hop;
      if (!trusted(ip)) return client;
    }
    return client;
  }

  private boolean isTrusted(String address) {
    byte[] ip = NetUtil.createByteArrayFromIpAddressString(address);
    return ip != null && trusted(ip);
  }

  private boolean trusted(byte[] ip) {
    for (Cidr c : trusted) if (c.contains(ip)) return true;
    return false;
  }

  /** A router handler (mounted only when proxies are trusted): puts the client's address in the context. */
  void handle(RoutingContext ctx) {
    var remote = ctx.request().remoteAddress();
    List<String> values = ctx.request().headers().getAll("X-Forwarded-For");
    String resolved = resolve(remote == null ? null : remote.host(), values.isEmpty() ? null : String.join(",", values));
    if (resolved != null) ctx.put(KEY, resolved);
    ctx.next();
  }

  /** The client's address of a request (the TCP peer when no proxy is trusted) in its usual form, or null. */
  static String of(RoutingContext ctx) {
    String resolved = ctx.get(KEY);
    if (resolved != null) return resolved;
    var remote = ctx.request().remoteAddress();
    return remote == null ? null : Addresses.canonical(remote.host());
  }
}
