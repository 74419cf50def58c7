package io.meshplane.meshca;

import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.spec.ECGenParameterSpec;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;

/** CSRs as an agent makes them (and as a hostile one might), for tests. */
final class TestCsrs {
  private TestCsrs() {}

  static KeyPair pair(String algorithm) throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance(algorithm.equals("EC") || algorithm.equals("P-384") ? "EC" : algorithm);
    if (algorithm.equals("EC")) g.initialize(new ECGenParameterSpec("secp256r1"));
    if (algorithm.equals("P-384")) g.initialize(new ECGenParameterSpec("secp384r1"));
    if (algorithm.equals("RSA")) g.initialize(2048);
    return g.generateKeyPair();
  }

  /** A CSR in PEM for {@code pair}'s public key, signed by {@code signer} (the pair's own key for an honest CSR). */
  static String csr(KeyPair pair, PrivateKey signer, String subject) throws Exception {
    String alg = switch (signer.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "Ed25519", "EdDSA" -> "Ed25519";
      default -> "SHA256withECDSA";
    };
    byte[] der = new JcaPKCS10CertificationRequestBuilder(new X500Name(subject), pair.getPublic())
        .build(new JcaContentSignerBuilder(alg).build(signer)).getEncoded();
    return Pki.pem("CERTIFICATE REQUEST", der);
  }

  static String csr(KeyPair pair) throws Exception {
    return csr(pair, pair.getPrivate(), "CN=ignored.example.com, O=Someone Else");
  }
}
