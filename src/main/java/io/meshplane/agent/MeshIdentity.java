package io.meshplane.agent;

import java.security.PrivateKey;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * What the mesh TLS listener and dialer need of the node's MeshCA state, as one immutable copy: the
 * private key and the certificate chain it presents (leaf first; empty while it holds no usable
 * certificate), the roots it trusts and the revocation list it holds. {@link AgentPki} is confined to
 * the agent's event loop; the TLS key and trust managers read the latest copy at each handshake, so a
 * renewed certificate, a new bundle or a new revocation applies to the next handshake without a restart.
 */
record MeshIdentity(PrivateKey key, List<X509Certificate> chain, List<X509Certificate> bundle, Set<String> revokedSerials,
    Set<String> revokedKeys, long revocationsVersion) {
  static final MeshIdentity NONE = new MeshIdentity(null, List.of(), List.of(), Set.of(), Set.of(), -1);

  MeshIdentity {
    chain = List.copyOf(chain);
    bundle = List.copyOf(bundle);
    revokedSerials = Set.copyOf(revokedSerials);
    revokedKeys = Set.copyOf(revokedKeys);
    if (key == null) chain = List.of();
  }

  /** Whether there is a certificate (and its key) to present. */
  boolean usable() {
    return key != null && !chain.isEmpty();
  }

  /** The serial of the certificate presented, or null. */
  String serial() {
    return usable() ? AgentPki.hex(chain.get(0).getSerialNumber()) : null;
  }

  /** This node's SPIFFE id, or null without a certificate. */
  String spiffeId() {
    return usable() ? spiffeId(chain.get(0)) : null;
  }

  boolean revoked(String serial, String spkiSha256) {
    return revokedSerials.contains(serial) || revokedKeys.contains(spkiSha256);
  }

  /** A certificate's {@code spiffe://} URI SAN, or null when it has none. */
  static String spiffeId(X509Certificate c) {
    try {
      Collection<List<?>> names = c.getSubjectAlternativeNames();
      if (names == null) return null;
      for (List<?> n : names) {
        // 6: uniformResourceIdentifier
        if (Integer.valueOf(6).equals(n.get(0)) && n.get(1) instanceof String uri && uri.startsWith("spiffe://")) return uri;
      }
    } catch (CertificateParsingException e) {
      return null;
    }
    return null;
  }
}
