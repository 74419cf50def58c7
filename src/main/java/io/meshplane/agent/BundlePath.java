package io.meshplane.agent;

import java.security.GeneralSecurityException;
import java.security.cert.CertPathValidator;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** A chain's path validation under a trust bundle, for {@link AgentPki} (revocation is the caller's: the list it holds). */
final class BundlePath {
  private BundlePath() {}

  /**
   * The chain {@code leaf, intermediates…} under {@code bundle}'s roots at {@code nowMs}: null when it verifies, else why not.
   * The shortest prefix of the chain that ends under a root held counts: during a root rotation a chain ends with the new
   * root cross-signed by the old one, which a node holding the new root does not need (and PKIX would not take past its anchor).
   */
  static String verify(List<X509Certificate> bundle, X509Certificate leaf, List<X509Certificate> intermediates, long nowMs) {
    if (bundle.isEmpty()) return "no trust bundle held";
    String why = null;
    for (int k = 0; k <= intermediates.size(); k++) {
      why = validate(bundle, leaf, intermediates.subList(0, k), nowMs);
      if (why == null) break;
    }
    return why;
  }

  private static String validate(List<X509Certificate> bundle, X509Certificate leaf, List<X509Certificate> intermediates, long nowMs) {
    List<X509Certificate> path = new ArrayList<>();
    path.add(leaf);
    path.addAll(intermediates);
    String why = pkix(bundle, path, nowMs);
    return why == null ? null : "untrusted: " + why;
  }

  /**
   * PKIX path validation of {@code path} (leaf first) under {@code roots} at {@code atMs}, revocation off (the caller
   * checks the list it holds, by serial and by key): null when it verifies, else the validator's reason. Shared by the
   * agent's own certificate ({@link AgentPki}) and its peers' ({@link PeerVerdict}).
   */
  static String pkix(List<X509Certificate> roots, List<X509Certificate> path, long atMs) {
    try {
      Set<TrustAnchor> anchors = new HashSet<>();
      for (X509Certificate r : roots) anchors.add(new TrustAnchor(r, null));
      PKIXParameters params = new PKIXParameters(anchors);
      params.setRevocationEnabled(false);
      params.setDate(new Date(atMs));
      CertPathValidator.getInstance("PKIX").validate(CertificateFactory.getInstance("X.509").generateCertPath(path), params);
      return null;
    } catch (GeneralSecurityException e) {
      return e.getMessage();
    }
  }
}
