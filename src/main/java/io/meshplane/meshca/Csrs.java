package io.meshplane.meshca;

import io.meshplane.common.Refusal;
import java.io.IOException;
import java.io.StringReader;
import java.util.Base64;
import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.bouncycastle.asn1.edec.EdECObjectIdentifiers;
import org.bouncycastle.asn1.pkcs.PKCSObjectIdentifiers;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.asn1.x9.X9ObjectIdentifiers;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentVerifierProviderBuilder;
import org.bouncycastle.pkcs.PKCS10CertificationRequest;
import org.bouncycastle.pkcs.PKCSException;
import org.bouncycastle.util.io.pem.PemObject;
import org.bouncycastle.util.io.pem.PemReader;

/**
 * A node's PKCS#10 CSR, checked: it parses, its signature verifies with its own key (the node holds the
 * private key), and the key is ECDSA P-256 or Ed25519. Every name and attribute in it is ignored: the
 * certificate names the node as the coordinator knows it. Each refusal names the field {@code pki.csr}.
 */
final class Csrs {
  static final String FIELD = "pki.csr";
  /** A P-256 or Ed25519 CSR is a few hundred bytes; more is not a CSR this CA signs. */
  static final int MAX_CHARS = 8192;

  private Csrs() {}

  /** The CSR's public key, once the CSR is checked. PEM ({@code CERTIFICATE REQUEST}) or base64 of the DER. */
  static SubjectPublicKeyInfo check(String text) {
    if (text == null || text.isBlank()) throw Refusal.invalid(FIELD, "is missing: a PKCS#10 CSR in PEM");
    if (text.length() > MAX_CHARS) throw Refusal.invalid(FIELD, "is longer than " + MAX_CHARS + " characters");
    byte[] der = der(text.strip());
    PKCS10CertificationRequest csr;
    try {
      csr = new PKCS10CertificationRequest(der);
    } catch (IOException | RuntimeException e) {
      throw Refusal.invalid(FIELD, "is not a PKCS#10 certificate request");
    }
    SubjectPublicKeyInfo spki = csr.getSubjectPublicKeyInfo();
    String kind = keyKind(spki);
    if (kind == null) {
      throw Refusal.invalid(FIELD, "has a " + algorithmName(spki.getAlgorithm().getAlgorithm())
          + " key: only ECDSA P-256 or Ed25519 keys are accepted");
    }
    boolean valid;
    try {
      valid = csr.isSignatureValid(new JcaContentVerifierProviderBuilder().setProvider(Pki.BC).build(spki));
    } catch (OperatorCreationException | PKCSException | RuntimeException e) {
      valid = false;
    }
    if (!valid) throw Refusal.invalid(FIELD, "its signature does not verify with its " + kind + " key");
    return spki;
  }

  /** "ECDSA P-256", "Ed25519", or null for any other key. */
  static String keyKind(SubjectPublicKeyInfo spki) {
    ASN1ObjectIdentifier alg = spki.getAlgorithm().getAlgorithm();
    if (EdECObjectIdentifiers.id_Ed25519.equals(alg)) return "Ed25519";
    if (X9ObjectIdentifiers.id_ecPublicKey.equals(alg) && X9ObjectIdentifiers.prime256v1.equals(spki.getAlgorithm().getParameters())) {
      return "ECDSA P-256";
    }
    return null;
  }

  private static String algorithmName(ASN1ObjectIdentifier alg) {
    if (PKCSObjectIdentifiers.rsaEncryption.equals(alg)) return "RSA";
    if (X9ObjectIdentifiers.id_ecPublicKey.equals(alg)) return "EC key on another curve than P-256";
    if (EdECObjectIdentifiers.id_Ed448.equals(alg)) return "Ed448";
    return "key of algorithm " + alg.getId();
  }

  private static byte[] der(String text) {
    if (text.startsWith("-----BEGIN")) {
      try (PemReader r = new PemReader(new StringReader(text))) {
        PemObject o = r.readPemObject();
        if (o == null || !("CERTIFICATE REQUEST".equals(o.getType()) || "NEW CERTIFICATE REQUEST".equals(o.getType()))) {
          throw Refusal.invalid(FIELD, "is PEM, but not a CERTIFICATE REQUEST");
        }
        return o.getContent();
      } catch (IOException | RuntimeException e) {
        if (e instanceof Refusal r) throw r;
        throw Refusal.invalid(FIELD, "is not a readable PEM CERTIFICATE REQUEST");
      }
    }
    try {
      return Base64.getMimeDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      throw Refusal.invalid(FIELD, "is neither PEM nor base64 of a DER CSR");
    }
  }
}
