package io.meshplane.meshca;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.Date;
import java.util.HexFormat;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.util.io.pem.PemObject;
import org.bouncycastle.util.io.pem.PemWriter;

/**
 * The X.509 pieces MeshCA builds, all through BouncyCastle (no hand-written ASN.1): ECDSA P-256 keys,
 * the root and intermediate certificates, PEM, serials and key hashes. Its own BouncyCastle provider
 * instance, never registered JVM-wide (the token signer and TLS keep the JDK's providers).
 */
final class Pki {
  static final BouncyCastleProvider BC = new BouncyCastleProvider();
  static final String SIGNATURE = "SHA256withECDSA";
  /** notBefore is set this far back, for nodes whose clocks are behind. */
  static final java.time.Duration SKEW = java.time.Duration.ofMinutes(5);
  private static final SecureRandom RANDOM = new SecureRandom();

  private Pki() {}

  static KeyPair p256() {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
      return g.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("ECDSA P-256 is not available: " + e.getMessage());
    }
  }

  static PrivateKey privateKey(byte[] pkcs8) {
    try {
      return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("a CA private key does not parse: " + e.getClass().getSimpleName());
    }
  }

  /** 128 random bits, positive (a serial's high bit is cleared so that its DER INTEGER needs no sign byte beyond 16 bytes + 1). */
  static BigInteger serial() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    BigInteger s = new BigInteger(1, b);
    return s.signum() == 0 ? BigInteger.ONE : s;
  }

  /** A serial as the API and the table write it: 32 lower-case hex digits. */
  static String hex(BigInteger serial) {
    String h = serial.toString(16);
    return "0".repeat(Math.max(0, 32 - h.length())) + h;
  }

  static String sha256Hex(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  static ContentSigner signer(PrivateKey key) {
    try {
      return new JcaContentSignerBuilder(SIGNATURE).setProvider(BC).build(key);
    } catch (OperatorCreationException e) {
      throw new IllegalStateException("cannot sign with the CA key: " + e.getMessage());
    }
  }

  /** A self-signed root: CA, no path length limit, keyCertSign and cRLSign. */
  static X509CertificateHolder root(KeyPair pair, String name, Instant now, java.time.Duration lifetime) {
    X500Name subject = new X500Name("O=Meshplane, CN=" + name);
    SubjectPublicKeyInfo spki = SubjectPublicKeyInfo.getInstance(pair.getPublic().getEncoded());
    X509v3CertificateBuilder b = new X509v3CertificateBuilder(subject, serial(), Date.from(now.minus(SKEW)), Date.from(now.plus(lifetime)),
        subject, spki);
    try {
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(spki));
    } catch (CertIOException | GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    return b.build(signer(pair.getPrivate()));
  }

  /** An intermediate signed by {@code issuer}: CA with path length 0 (it signs node certificates only), keyCertSign and cRLSign. */
  static X509CertificateHolder intermediate(PublicKey key, String name, X509CertificateHolder issuer, PrivateKey issuerKey, Instant now,
      java.time.Duration lifetime) {
    Instant notAfter = now.plus(lifetime);
    // never beyond the issuer: a chain is only as long-lived as its shortest link
    if (notAfter.isAfter(issuer.getNotAfter().toInstant())) notAfter = issuer.getNotAfter().toInstant();
    SubjectPublicKeyInfo spki = SubjectPublicKeyInfo.getInstance(key.getEncoded());
    X509v3CertificateBuilder b = new X509v3CertificateBuilder(issuer.getSubject(), serial(), Date.from(now.minus(SKEW)), Date.from(notAfter),
        new X500Name("O=Meshplane, CN=" + name), spki);
    try {
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(spki));
      b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(issuer.getSubjectPublicKeyInfo()));
    } catch (CertIOException | GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    return b.build(signer(issuerKey));
  }

  static String pem(String type, byte[] der) {
    StringWriter out = new StringWriter();
    try (PemWriter w = new PemWriter(out)) {
      w.writeObject(new PemObject(type, der));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return out.toString();
  }

  static String pem(X509CertificateHolder cert) {
    try {
      return pem("CERTIFICATE", cert.getEncoded());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static X509CertificateHolder certificate(byte[] der) {
    try {
      return new X509CertificateHolder(der);
    } catch (IOException e) {
      throw new IllegalStateException("a stored certificate does not parse: " + e.getMessage());
    }
  }

  /**
   * A root rotation's bridge: the new root's subject and key, issued and signed by the old root (CA, no
   * path length limit, keyCertSign and cRLSign, the new root's SKI and the old root's AKI), valid while
   * both are. A chain {@code node, new intermediate, this} verifies under the old root alone, and
   * {@code node, new intermediate} under the new root: nodes holding either bundle trust each other.
   */
  static X509CertificateHolder crossSigned(X509CertificateHolder newRoot, X509CertificateHolder oldRoot, PrivateKey oldRootKey, Instant now) {
    Instant notAfter = newRoot.getNotAfter().toInstant().isBefore(oldRoot.getNotAfter().toInstant()) ? newRoot.getNotAfter().toInstant()
        : oldRoot.getNotAfter().toInstant();
    X509v3CertificateBuilder b = new X509v3CertificateBuilder(oldRoot.getSubject(), serial(), Date.from(now.minus(SKEW)), Date.from(notAfter),
        newRoot.getSubject(), newRoot.getSubjectPublicKeyInfo());
    try {
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(newRoot.getSubjectPublicKeyInfo()));
      b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(oldRoot.getSubjectPublicKeyInfo()));
    } catch (CertIOException | GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    return b.build(signer(oldRootKey));
  }
}
