package io.meshplane.meshca;

import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import java.util.Base64;

/**
 * Who a node certificate is for, as the coordinator knows the node (never as the CSR names it): its id,
 * team and environment (the SPIFFE ID {@code spiffe://<trust domain>/team/<t>/env/<e>/node/<id>}), its
 * mesh address (the IP SAN) and its current WireGuard public key (recorded in the certificate, so a
 * re-key reissues).
 */
public record NodeIdentity(String nodeId, String team, String environment, String meshAddress, String wireguardKey) {
  public NodeIdentity {
    if (!Ids.wellFormed(nodeId)) throw new IllegalArgumentException("node id: not an id");
    if (!Fields.isSlug(team) || !Fields.isSlug(environment)) throw new IllegalArgumentException("team, environment: not slugs");
    if (!ipv4(meshAddress)) throw new IllegalArgumentException("mesh address: not an IPv4 address");
    if (wireguardKey == null || wireguardKey.length() != 44 || decode(wireguardKey) == null) {
      throw new IllegalArgumentException("wireguard key: not base64 of 32 bytes");
    }
  }

  /** The URI SAN. */
  public String spiffeId(String trustDomain) {
    return "spiffe://" + trustDomain + "/team/" + team + "/env/" + environment + "/node/" + nodeId;
  }

  /** The WireGuard key's 32 bytes. */
  byte[] wireguardKeyBytes() {
    return decode(wireguardKey);
  }

  private static byte[] decode(String s) {
    try {
      byte[] b = Base64.getDecoder().decode(s);
      return b.length == 32 ? b : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static boolean ipv4(String s) {
    if (s == null) return false;
    String[] parts = s.split("\\.", -1);
    if (parts.length != 4) return false;
    for (String p : parts) {
      if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9')) return false;
      if (Integer.parseInt(p) > 255 || (p.length() > 1 && p.charAt(0) == '0')) return false;
    }
    return true;
  }
}
