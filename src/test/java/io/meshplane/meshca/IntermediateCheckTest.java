package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Optional;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.junit.jupiter.api.Test;

/**
 * What a replica will check on an intermediate signed outside it: the one Pki makes passes, and each
 * way an intermediate can be wrong (another issuer, a bad signature, not a CA, a path length other than
 * 0, no keyCertSign or cRLSign, an unsupported key, the root's key, another key than the staged one,
 * missing or foreign key identifiers, validity outside the root's or not now) is named.
 */
class IntermediateCheckTest {
  static final Instant NOW = Instant.now();
  static final KeyPair ROOT_PAIR = Pki.p256();
  static final X509CertificateHolder ROOT = Pki.root(ROOT_PAIR, "MeshCA root test", NOW, Duration.ofDays(3650));
  static final X509Certificate ROOT_X509 = OfflineCa.x509(ROOT);
  static final KeyPair STAGED = Pki.p256();

  /** An intermediate built by hand, field by field: the good profile unless a test changes it. */
  static final class Draft {
    X500Name issuer = ROOT.getSubject();
    PrivateKey signer = ROOT_PAIR.getPrivate();
    PublicKey key = STAGED.getPublic();
    Instant from = NOW.minus(Pki.SKEW);
    Instant to = NOW.plus(Duration.ofDays(90));
    BasicConstraints constraints = new BasicConstraints(0);
    boolean constraintsCritical = true;
    Integer usage = KeyUsage.keyCertSign | KeyUsage.cRLSign;
    boolean ski = true;
    SubjectPublicKeyInfo akiOf = ROOT.getSubjectPublicKeyInfo();

    X509Certificate build() throws Exception {
      SubjectPublicKeyInfo spki = SubjectPublicKeyInfo.getInstance(key.getEncoded());
      X509v3CertificateBuilder b = new X509v3CertificateBuilder(issuer, Pki.serial(), Date.from(from), Date.from(to),
          new X500Name("O=Meshplane, CN=MeshCA intermediate test"), spki);
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      if (constraints != null) b.addExtension(Extension.basicConstraints, constraintsCritical, constraints);
      if (usage != null) b.addExtension(Extension.keyUsage, true, new KeyUsage(usage));
      if (ski) b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(spki));
      if (akiOf != null) b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(akiOf));
      return OfflineCa.x509(b.build(Pki.signer(signer)));
    }
  }

  static Optional<String> check(Draft d) throws Exception {
    return IntermediateCheck.check(d.build(), ROOT_X509, STAGED.getPublic(), NOW);
  }

  static void refused(Draft d, String words) throws Exception {
    Optional<String> problem = check(d);
    assertTrue(problem.isPresent(), "accepted, expected: " + words);
    assertTrue(problem.get().contains(words), problem.get());
  }

  @Test
  void theIntermediatePkiMakesPasses() throws Exception {
    X509CertificateHolder made = Pki.intermediate(STAGED.getPublic(), "MeshCA intermediate x", ROOT, ROOT_PAIR.getPrivate(), NOW,
        Duration.ofDays(90));
    assertEquals(Optional.empty(), IntermediateCheck.check(OfflineCa.x509(made), ROOT_X509, STAGED.getPublic(), NOW));
    assertEquals(Optional.empty(), IntermediateCheck.check(OfflineCa.x509(made), ROOT_X509, STAGED.getPublic()));
    assertEquals(Optional.empty(), IntermediateCheck.check(OfflineCa.x509(made), ROOT_X509, null, NOW), "no staged key: not checked");
    assertEquals(Optional.empty(), check(new Draft()));
    KeyPair ed = TestCsrs.pair("Ed25519");
    Draft edDraft = new Draft();
    edDraft.key = ed.getPublic();
    assertEquals(Optional.empty(), IntermediateCheck.check(edDraft.build(), ROOT_X509, ed.getPublic(), NOW), "an Ed25519 key is accepted");
  }

  @Test
  void anotherIssuerOrSignerIsRefused() throws Exception {
    KeyPair otherPair = Pki.p256();
    X509CertificateHolder other = Pki.root(otherPair, "MeshCA root other", NOW, Duration.ofDays(3650));
    Draft byOther = new Draft();
    byOther.issuer = other.getSubject();
    byOther.signer = otherPair.getPrivate();
    byOther.akiOf = other.getSubjectPublicKeyInfo();
    refused(byOther, "is issued by CN=MeshCA root other,O=Meshplane, not by the root CN=MeshCA root test,O=Meshplane");
    Draft forged = new Draft();
    forged.signer = otherPair.getPrivate(); // names the root as issuer, signed by another key
    refused(forged, "is not signed by the root");
    Draft notCa = new Draft();
    notCa.constraints = null;
    assertTrue(IntermediateCheck.check(new Draft().build(), notCa.build(), null, NOW).get().contains("root that is not a CA"));
  }

  @Test
  void aCaWithPathLengthZeroIsRequired() throws Exception {
    Draft none = new Draft();
    none.constraints = null;
    refused(none, "is not a CA certificate");
    Draft leaf = new Draft();
    leaf.constraints = new BasicConstraints(false);
    refused(leaf, "is not a CA certificate");
    Draft unlimited = new Draft();
    unlimited.constraints = new BasicConstraints(true);
    refused(unlimited, "must have path length 0 (it signs node certificates only), has no path length limit");
    Draft one = new Draft();
    one.constraints = new BasicConstraints(1);
    refused(one, "has path length 1");
    Draft lax = new Draft();
    lax.constraintsCritical = false;
    refused(lax, "basic constraints that are not critical");
  }

  @Test
  void keyCertSignAndCrlSignAreRequired() throws Exception {
    Draft none = new Draft();
    none.usage = null;
    refused(none, "has no key usage");
    Draft noCrl = new Draft();
    noCrl.usage = KeyUsage.keyCertSign;
    refused(noCrl, "without cRLSign");
    Draft noCertSign = new Draft();
    noCertSign.usage = KeyUsage.cRLSign | KeyUsage.digitalSignature;
    refused(noCertSign, "without keyCertSign");
    Draft more = new Draft();
    more.usage = KeyUsage.keyCertSign | KeyUsage.cRLSign | KeyUsage.digitalSignature;
    assertEquals(Optional.empty(), check(more), "more usages than needed are not a fault");
  }

  @Test
  void theKeyIsP256OrEd25519NotTheRootsAndTheStagedOne() throws Exception {
    Draft rsa = new Draft();
    rsa.key = TestCsrs.pair("RSA").getPublic();
    assertTrue(IntermediateCheck.check(rsa.build(), ROOT_X509, null, NOW).get().contains("has a RSA key"));
    Draft p384 = new Draft();
    p384.key = TestCsrs.pair("P-384").getPublic();
    assertTrue(IntermediateCheck.check(p384.build(), ROOT_X509, null, NOW).get().contains("only ECDSA P-256 or Ed25519"));
    Draft rootsOwn = new Draft();
    rootsOwn.key = ROOT_PAIR.getPublic();
    assertTrue(IntermediateCheck.check(rootsOwn.build(), ROOT_X509, null, NOW).get().contains("has the root's own key"));
    Draft another = new Draft();
    another.key = Pki.p256().getPublic();
    refused(another, "certifies another key than the staged one");
  }

  @Test
  void keyIdentifiersAreThereAndNameTheRoot() throws Exception {
    Draft noSki = new Draft();
    noSki.ski = false;
    refused(noSki, "has no subject key identifier");
    Draft noAki = new Draft();
    noAki.akiOf = null;
    refused(noAki, "has no authority key identifier");
    Draft foreignAki = new Draft();
    foreignAki.akiOf = SubjectPublicKeyInfo.getInstance(Pki.p256().getPublic().getEncoded());
    refused(foreignAki, "names another key than the root's");
  }

  @Test
  void validityIsWithinTheRootsAndNow() throws Exception {
    Draft outlives = new Draft();
    outlives.to = ROOT.getNotAfter().toInstant().plusSeconds(1);
    refused(outlives, "after the root");
    Draft early = new Draft();
    early.from = ROOT.getNotBefore().toInstant().minusSeconds(1);
    refused(early, "before the root");
    Draft expired = new Draft();
    expired.to = NOW.minusSeconds(1);
    refused(expired, "expired at");
    Draft future = new Draft();
    future.from = NOW.plus(Duration.ofHours(1));
    refused(future, "is not valid yet");
    Draft skewed = new Draft();
    skewed.from = NOW.plus(Duration.ofMinutes(2));
    assertEquals(Optional.empty(), check(skewed), "a notBefore a few minutes ahead is clock skew, accepted");
  }
}
