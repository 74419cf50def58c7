package io.meshplane.meshca;

import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.PublicKey;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.ASN1Primitive;
import org.bouncycastle.asn1.x509.AuthorityKeyIdentifier;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.SubjectKeyIdentifier;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;

/**
 * Is a certificate an intermediate this deployment may issue node certificates from, under a given
 * root? The check a replica runs on an intermediate signed outside it (by {@code meshplane ca sign}, or
 * any tool) before it takes it, and the one {@code ca sign} runs on what it made: issued and signed by
 * the root, a CA with path length 0 (critical basic constraints), keyCertSign and cRLSign, a subject key
 * identifier and an authority key identifier naming the root's key, valid now and within the root's
 * validity, an ECDSA P-256 or Ed25519 key other than the root's, and the key the replica staged.
 */
final class IntermediateCheck {
  private static final int KEY_CERT_SIGN = 5;
  private static final int CRL_SIGN = 6;

  private IntermediateCheck() {}

  /**
   * What is wrong with {@code intermediate} under {@code root}, or nothing: one line that reads after the
   * certificate's name or a field ("is not a CA certificate …", "has …", "expired at …").
   */
  static Optional<String> check(X509Certificate intermediate, X509Certificate root, PublicKey expectedKey) {
    return check(intermediate, root, expectedKey, Instant.now());
  }

  /**
   * @param expectedKey the key the replica staged (its private key is the replica's); null checks no key
   * @param now the instant the certificate must be valid at (allowing {@link Pki#SKEW} for a notBefore ahead)
   */
  static Optional<String> check(X509Certificate intermediate, X509Certificate root, PublicKey expectedKey, Instant now) {
    if (root.getBasicConstraints() < 0) return Optional.of("is checked against a root that is not a CA certificate (" + root.getSubjectX500Principal().getName() + ")");
    if (!intermediate.getIssuerX500Principal().equals(root.getSubjectX500Principal())) {
      return Optional.of("is issued by " + intermediate.getIssuerX500Principal().getName() + ", not by the root "
          + root.getSubjectX500Principal().getName());
    }
    try {
      intermediate.verify(root.getPublicKey());
    } catch (GeneralSecurityException | RuntimeException e) {
      return Optional.of("is not signed by the root: its signature does not verify with the root's key");
    }
    Optional<String> shape = shape(intermediate);
    if (shape.isPresent()) return shape;
    Optional<String> key = key(intermediate, root, expectedKey);
    if (key.isPresent()) return key;
    Optional<String> ids = identifiers(intermediate, root);
    if (ids.isPresent()) return ids;
    return validity(intermediate, root, now);
  }

  /** A CA with path length 0 (it signs node certificates only), keyCertSign and cRLSign. */
  private static Optional<String> shape(X509Certificate c) {
    int pathLen = c.getBasicConstraints();
    if (pathLen < 0) return Optional.of("is not a CA certificate (its basic constraints do not say CA)");
    if (pathLen != 0) {
      return Optional.of("must have path length 0 (it signs node certificates only), has "
          + (pathLen == Integer.MAX_VALUE ? "no path length limit" : "path length " + pathLen));
    }
    Set<String> critical = c.getCriticalExtensionOIDs();
    if (critical == null || !critical.contains(Extension.basicConstraints.getId())) return Optional.of("has basic constraints that are not critical");
    boolean[] usage = c.getKeyUsage();
    if (usage == null) return Optional.of("has no key usage: keyCertSign and cRLSign are needed");
    if (usage.length <= CRL_SIGN || !usage[KEY_CERT_SIGN] || !usage[CRL_SIGN]) {
      return Optional.of("has a key usage without " + (usage.length > KEY_CERT_SIGN && usage[KEY_CERT_SIGN] ? "cRLSign" : "keyCertSign")
          + ": keyCertSign and cRLSign are needed");
    }
    return Optional.empty();
  }

  private static Optional<String> key(X509Certificate c, X509Certificate root, PublicKey expectedKey) {
    byte[] encoded = c.getPublicKey().getEncoded();
    SubjectPublicKeyInfo spki = SubjectPublicKeyInfo.getInstance(encoded);
    if (Csrs.keyKind(spki) == null) return Optional.of("has a " + c.getPublicKey().getAlgorithm() + " key: only ECDSA P-256 or Ed25519 keys are accepted");
    if (Arrays.equals(encoded, root.getPublicKey().getEncoded())) return Optional.of("has the root's own key");
    if (expectedKey != null && !Arrays.equals(encoded, expectedKey.getEncoded())) {
      return Optional.of("certifies another key than the staged one (SubjectPublicKeyInfo SHA-256 " + Pki.sha256Hex(encoded) + ", staged "
          + Pki.sha256Hex(expectedKey.getEncoded()) + ")");
    }
    return Optional.empty();
  }

  /** A subject key identifier, and an authority key identifier naming the root's key when the root has one. */
  private static Optional<String> identifiers(X509Certificate c, X509Certificate root) {
    byte[] ski = extension(c, Extension.subjectKeyIdentifier);
    if (ski == null) return Optional.of("has no subject key identifier");
    byte[] rootSki = extension(root, Extension.subjectKeyIdentifier);
    if (rootSki == null) return Optional.empty();
    byte[] aki = extension(c, Extension.authorityKeyIdentifier);
    try {
      byte[] named = aki == null ? null : AuthorityKeyIdentifier.getInstance(aki).getKeyIdentifier();
      if (named == null) return Optional.of("has no authority key identifier naming the root's key");
      if (!Arrays.equals(named, SubjectKeyIdentifier.getInstance(rootSki).getKeyIdentifier())) {
        return Optional.of("has an authority key identifier that names another key than the root's");
      }
    } catch (IllegalArgumentException e) {
      return Optional.of("has an authority key identifier that does not parse");
    }
    return Optional.empty();
  }

  private static Optional<String> validity(X509Certificate c, X509Certificate root, Instant now) {
    Instant notBefore = c.getNotBefore().toInstant();
    Instant notAfter = c.getNotAfter().toInstant();
    if (notAfter.isAfter(root.getNotAfter().toInstant())) {
      return Optional.of("is valid until " + notAfter + ", after the root (until " + root.getNotAfter().toInstant() + ")");
    }
    if (notBefore.isBefore(root.getNotBefore().toInstant())) {
      return Optional.of("is valid from " + notBefore + ", before the root (from " + root.getNotBefore().toInstant() + ")");
    }
    if (!notAfter.isAfter(now)) return Optional.of("expired at " + notAfter);
    if (notBefore.isAfter(now.plus(Pki.SKEW))) return Optional.of("is not valid yet (from " + notBefore + ")");
    return Optional.empty();
  }

  /** The inner value of an extension (its OCTET STRING's content), or null when absent or unreadable. */
  private static byte[] extension(X509Certificate c, org.bouncycastle.asn1.ASN1ObjectIdentifier oid) {
    byte[] outer = c.getExtensionValue(oid.getId());
    if (outer == null) return null;
    try {
      return ASN1OctetString.getInstance(ASN1Primitive.fromByteArray(outer)).getOctets();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
