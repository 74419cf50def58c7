package io.meshplane.agent;

import io.vertx.core.json.JsonObject;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The agent's verdict on a peer's certificate, the one rule both ways: the mesh TLS listener judges a
 * client's certificate with it, the dialer ({@code GET /peers/{id}/tls}) the server's. {@code trusted}
 * when the chain presented verifies under the bundle held (JDK PKIX, at the time of the handshake), the
 * leaf carries a SPIFFE id and the extended key usage its side needs, and no certificate of the chain is
 * on the revocation list held (by serial or by the SHA-256 of its key); else {@code untrusted} (with the
 * validator's reason), {@code revoked} or {@code expired} (a chain that verified while the leaf was
 * valid). {@code unreachable} is the dialer's, when no certificate could be judged.
 *
 * @param spiffeId serial notAfter what the leaf presented says, when there was one (null otherwise)
 */
record PeerVerdict(String verdict, String reason, String spiffeId, String serial, String notAfter) {
  static final String TRUSTED = "trusted";
  static final String REVOKED = "revoked";
  static final String UNTRUSTED = "untrusted";
  static final String EXPIRED = "expired";
  static final String UNREACHABLE = "unreachable";
  /** A longer chain is refused before any signature is checked (the mesh's is two: node and intermediate). */
  static final int MAX_CHAIN = 5;
  private static final String SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
  private static final String CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

  boolean trusted() {
    return TRUSTED.equals(verdict);
  }

  static PeerVerdict unreachable(String reason) {
    return new PeerVerdict(UNREACHABLE, reason, null, null, null);
  }

  JsonObject toJson() {
    return new JsonObject().put("verdict", verdict).put("reason", reason).put("spiffe_id", spiffeId).put("serial", serial).put("not_after", notAfter);
  }

  /**
   * Judges a presented chain (leaf first).
   *
   * @param asServer true when the peer presents it as a server (the dialer's side: serverAuth), false as a client (clientAuth)
   * @param expectedNode the node id the dialer meant to reach (its SPIFFE id must end in {@code /node/<id>}), or null
   */
  static PeerVerdict judge(MeshIdentity id, X509Certificate[] presented, boolean asServer, String expectedNode, long nowMs) {
    if (presented == null || presented.length == 0) return new PeerVerdict(UNTRUSTED, "no certificate presented", null, null, null);
    X509Certificate leaf = presented[0];
    String spiffe = MeshIdentity.spiffeId(leaf);
    String serial = AgentPki.hex(leaf.getSerialNumber());
    String notAfter = Instant.ofEpochMilli(leaf.getNotAfter().getTime()).toString();
    if (presented.length > MAX_CHAIN) return new PeerVerdict(UNTRUSTED, "a chain of " + presented.length + " certificates (at most " + MAX_CHAIN + ")", spiffe, serial, notAfter);
    if (id.bundle().isEmpty()) return new PeerVerdict(UNTRUSTED, "no trust bundle held yet", spiffe, serial, notAfter);
    if (nowMs < leaf.getNotBefore().getTime()) {
      return new PeerVerdict(UNTRUSTED, "not valid before " + leaf.getNotBefore().toInstant(), spiffe, serial, notAfter);
    }
    boolean expired = nowMs > leaf.getNotAfter().getTime();
    List<X509Certificate> path = new ArrayList<>();
    for (X509Certificate c : presented) {
      if (!id.bundle().contains(c)) path.add(c); // a root sent along is the anchor, not part of the path
    }
    if (path.isEmpty()) return new PeerVerdict(UNTRUSTED, "presents a root of the bundle as its own certificate", spiffe, serial, notAfter);
    // the shortest prefix that ends under a root held: during a CA root rotation a chain ends with the new root cross-signed
    // by the old one, which a peer holding the new root does not need (PKIX validates a path as given)
    String why = null;
    for (int k = 1; k <= path.size(); k++) {
      why = pkix(id.bundle(), path.subList(0, k), expired ? leaf.getNotAfter().getTime() - 1000 : nowMs);
      if (why == null) break;
    }
    if (why != null) return new PeerVerdict(UNTRUSTED, why, spiffe, serial, notAfter);
    String usage = asServer ? SERVER_AUTH : CLIENT_AUTH;
    try {
      List<String> eku = leaf.getExtendedKeyUsage();
      if (eku != null && !eku.contains(usage)) {
        return new PeerVerdict(UNTRUSTED, "not for " + (asServer ? "server" : "client") + " authentication (extended key usage)", spiffe, serial, notAfter);
      }
    } catch (CertificateParsingException e) {
      return new PeerVerdict(UNTRUSTED, "unreadable extended key usage", spiffe, serial, notAfter);
    }
    if (spiffe == null) return new PeerVerdict(UNTRUSTED, "no SPIFFE id (a spiffe:// URI SAN)", spiffe, serial, notAfter);
    for (int i = 0; i < path.size(); i++) {
      X509Certificate c = path.get(i);
      String s = AgentPki.hex(c.getSerialNumber());
      String what = i == 0 ? "certificate " : "intermediate ";
      if (id.revokedSerials().contains(s)) {
        return new PeerVerdict(REVOKED, what + s + " is on the revocation list (version " + id.revocationsVersion() + ")", spiffe, serial, notAfter);
      }
      if (id.revokedKeys().contains(AgentPki.spkiSha256(c.getPublicKey()))) {
        return new PeerVerdict(REVOKED, "the key of " + what + s + " is on the revocation list (version " + id.revocationsVersion() + ")", spiffe, serial,
            notAfter);
      }
    }
    if (expired) return new PeerVerdict(EXPIRED, "expired at " + notAfter, spiffe, serial, notAfter);
    if (expectedNode != null && !spiffe.endsWith("/node/" + expectedNode)) {
      return new PeerVerdict(UNTRUSTED, "presents " + spiffe + ", not node " + expectedNode, spiffe, serial, notAfter);
    }
    return new PeerVerdict(TRUSTED, null, spiffe, serial, notAfter);
  }

  /** The path under the roots at {@code atMs}; null when it verifies, else why not. */
  private static String pkix(List<X509Certificate> roots, List<X509Certificate> path, long atMs) {
    String why = BundlePath.pkix(roots, path, atMs);
    return why == null ? null : "does not chain to the trust bundle held: " + why;
  }
}
