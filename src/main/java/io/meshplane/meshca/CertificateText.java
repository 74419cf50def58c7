package io.meshplane.meshca;

import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.bouncycastle.asn1.x509.AuthorityKeyIdentifier;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectKeyIdentifier;
import org.bouncycastle.cert.X509CertificateHolder;

/**
 * A certificate as {@code meshplane ca} prints it, one "name: value" per line: what an operator checks
 * before uploading it (and compares with {@code openssl x509 -noout -text -fingerprint -sha256}).
 */
final class CertificateText {
  private CertificateText() {}

  static String describe(X509CertificateHolder c) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"subject", c.getSubject().toString()});
    rows.add(new String[] {"issuer", c.getIssuer().toString()});
    rows.add(new String[] {"serial", Pki.hex(c.getSerialNumber())});
    rows.add(new String[] {"not before", c.getNotBefore().toInstant().toString()});
    rows.add(new String[] {"not after", c.getNotAfter().toInstant().toString()});
    rows.add(new String[] {"key", keyType(c)});
    rows.add(new String[] {"key SPKI SHA-256", spkiSha256(c)});
    rows.add(new String[] {"CA", ca(c)});
    rows.add(new String[] {"key usage", keyUsage(c)});
    SubjectKeyIdentifier ski = SubjectKeyIdentifier.fromExtensions(c.getExtensions());
    rows.add(new String[] {"subject key id", ski == null ? "(none)" : colons(ski.getKeyIdentifier())});
    AuthorityKeyIdentifier aki = AuthorityKeyIdentifier.fromExtensions(c.getExtensions());
    if (aki != null && aki.getKeyIdentifier() != null) rows.add(new String[] {"authority key id", colons(aki.getKeyIdentifier())});
    rows.add(new String[] {"SHA-256 fingerprint", fingerprint(c)});
    StringBuilder out = new StringBuilder();
    for (String[] row : rows) out.append(String.format("  %-20s %s%n", row[0] + ":", row[1]));
    return out.toString();
  }

  /** The SHA-256 of the DER, as openssl writes it: upper-case hex pairs joined by colons. */
  static String fingerprint(X509CertificateHolder c) {
    try {
      return colons(MessageDigest.getInstance("SHA-256").digest(c.getEncoded()));
    } catch (IOException | NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The SHA-256 of the SubjectPublicKeyInfo, lower-case hex: how the API names a key ({@code spki_sha256}). */
  static String spkiSha256(X509CertificateHolder c) {
    try {
      return Pki.sha256Hex(c.getSubjectPublicKeyInfo().getEncoded());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static String keyType(X509CertificateHolder c) {
    String kind = Csrs.keyKind(c.getSubjectPublicKeyInfo());
    return kind != null ? kind : "other (" + c.getSubjectPublicKeyInfo().getAlgorithm().getAlgorithm().getId() + ")";
  }

  private static String ca(X509CertificateHolder c) {
    BasicConstraints bc = BasicConstraints.fromExtensions(c.getExtensions());
    if (bc == null || !bc.isCA()) return "no";
    return bc.getPathLenConstraint() == null ? "yes, no path length limit" : "yes, path length " + bc.getPathLenConstraint();
  }

  private static String keyUsage(X509CertificateHolder c) {
    KeyUsage ku = KeyUsage.fromExtensions(c.getExtensions());
    if (ku == null) return "(none)";
    List<String> names = new ArrayList<>();
    String[] all = {"digitalSignature", "nonRepudiation", "keyEncipherment", "dataEncipherment", "keyAgreement", "keyCertSign", "cRLSign",
        "encipherOnly", "decipherOnly"};
    int[] bits = {KeyUsage.digitalSignature, KeyUsage.nonRepudiation, KeyUsage.keyEncipherment, KeyUsage.dataEncipherment, KeyUsage.keyAgreement,
        KeyUsage.keyCertSign, KeyUsage.cRLSign, KeyUsage.encipherOnly, KeyUsage.decipherOnly};
    for (int i = 0; i < all.length; i++) {
      if (ku.hasUsages(bits[i])) names.add(all[i]);
    }
    return String.join(", ", names);
  }

  private static String colons(byte[] bytes) {
    return HexFormat.ofDelimiter(":").withUpperCase().formatHex(bytes);
  }

  /** Extensions are read through BouncyCastle's parsers; one that does not parse shows as such, not as a crash. */
  static String safeDescribe(X509CertificateHolder c) {
    try {
      return describe(c);
    } catch (RuntimeException e) {
      return "  (a certificate whose extensions do not parse: " + e.getClass().getSimpleName() + ")\n";
    }
  }
}
