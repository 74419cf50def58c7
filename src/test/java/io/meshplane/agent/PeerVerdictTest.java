package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.util.Date;
import java.util.List;
import java.util.Set;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.Test;

/**
 * The verdict rule itself, on chains made here with BouncyCastle (a root, an intermediate, leaves): what
 * the two-agent test cannot reach in its time, an expired leaf, a key revoked under a new serial, a
 * revoked intermediate, the extended key usage of each side, a leaf without a SPIFFE id, too long a
 * chain, no bundle held.
 */
class PeerVerdictTest {
  static final long HOUR = 3_600_000;
  static final String SPIFFE = "spiffe://mesh.local/team/t/env/e/node/nd_01m8h8am5a5dqx1dz52m47v2dx";
  final long now = System.currentTimeMillis();
  final KeyPair rootKey = key();
  final KeyPair interKey = key();
  final X509Certificate root = cert("CN=root", rootKey.getPublic(), "CN=root", rootKey.getPrivate(), now - 20 * HOUR, now + 100 * HOUR, true, null, null);
  final X509Certificate inter = cert("CN=inter", interKey.getPublic(), "CN=root", rootKey.getPrivate(), now - 10 * HOUR, now + 50 * HOUR, true, null, null);

  static KeyPair key() {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(new ECGenParameterSpec("secp256r1"));
      return g.generateKeyPair();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static X509Certificate cert(String subject, PublicKey pub, String issuer, PrivateKey signer, long from, long to, boolean ca, String uri,
      KeyPurposeId[] usages) {
    try {
      var b = new JcaX509v3CertificateBuilder(new X500Principal(issuer), new BigInteger(64, new SecureRandom()).add(BigInteger.ONE), new Date(from),
          new Date(to), new X500Principal(subject), pub);
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(ca));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(ca ? KeyUsage.keyCertSign | KeyUsage.cRLSign : KeyUsage.digitalSignature));
      if (uri != null) b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName(GeneralName.uniformResourceIdentifier, uri)));
      if (usages != null) b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(usages));
      return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  X509Certificate leaf(PublicKey pub, long from, long to, String uri, KeyPurposeId... usages) {
    return cert("CN=leaf", pub, "CN=inter", interKey.getPrivate(), from, to, false, uri, usages.length == 0 ? null : usages);
  }

  MeshIdentity held(Set<String> serials, Set<String> keys) {
    return new MeshIdentity(null, List.of(), List.of(root), serials, keys, 7);
  }

  PeerVerdict judge(MeshIdentity id, boolean asServer, X509Certificate... chain) {
    return PeerVerdict.judge(id, chain, asServer, null, now);
  }

  @Test
  void eachVerdictWithItsReason() {
    KeyPair k = key();
    X509Certificate good = leaf(k.getPublic(), now - HOUR, now + HOUR, SPIFFE, KeyPurposeId.id_kp_clientAuth, KeyPurposeId.id_kp_serverAuth);
    MeshIdentity none = held(Set.of(), Set.of());
    assertEquals("trusted", judge(none, false, good, inter).verdict());
    assertEquals("trusted", judge(none, true, good, inter, root).verdict(), "a root sent along is the anchor");
    assertEquals(SPIFFE, judge(none, true, good, inter).spiffeId());

    // revoked by serial, by key (a new certificate for a revoked key), or through its intermediate
    assertEquals("revoked", judge(held(Set.of(AgentPki.hex(good.getSerialNumber())), Set.of()), false, good, inter).verdict());
    X509Certificate sameKey = leaf(k.getPublic(), now - HOUR, now + HOUR, SPIFFE);
    PeerVerdict byKey = judge(held(Set.of(), Set.of(AgentPki.spkiSha256(k.getPublic()))), false, sameKey, inter);
    assertEquals("revoked", byKey.verdict());
    assertTrue(byKey.reason().contains("the key of certificate") && byKey.reason().contains("version 7"), byKey.reason());
    PeerVerdict viaInter = judge(held(Set.of(AgentPki.hex(inter.getSerialNumber())), Set.of()), false, good, inter);
    assertEquals("revoked", viaInter.verdict());
    assertTrue(viaInter.reason().startsWith("intermediate "), viaInter.reason());

    // expired: the chain verified while the leaf was valid; an expired revoked one is revoked
    X509Certificate old = leaf(k.getPublic(), now - 3 * HOUR, now - HOUR, SPIFFE);
    PeerVerdict expired = judge(none, false, old, inter);
    assertEquals("expired", expired.verdict(), expired.reason());
    assertEquals("revoked", judge(held(Set.of(AgentPki.hex(old.getSerialNumber())), Set.of()), false, old, inter).verdict());

    // untrusted: not yet valid, no SPIFFE id, the other side's key usage, no intermediate, no bundle, too long, nothing presented
    assertEquals("untrusted", judge(none, false, leaf(k.getPublic(), now + HOUR, now + 2 * HOUR, SPIFFE), inter).verdict());
    PeerVerdict noId = judge(none, false, leaf(k.getPublic(), now - HOUR, now + HOUR, "https://example.net/x"), inter);
    assertTrue(noId.reason().contains("no SPIFFE id"), noId.reason());
    X509Certificate clientOnly = leaf(k.getPublic(), now - HOUR, now + HOUR, SPIFFE, KeyPurposeId.id_kp_clientAuth);
    assertEquals("trusted", judge(none, false, clientOnly, inter).verdict());
    PeerVerdict asServer = judge(none, true, clientOnly, inter);
    assertEquals("untrusted", asServer.verdict());
    assertTrue(asServer.reason().contains("server authentication"), asServer.reason());
    PeerVerdict noPath = judge(none, false, good);
    assertEquals("untrusted", noPath.verdict());
    assertTrue(noPath.reason().startsWith("does not chain to the trust bundle held"), noPath.reason());
    assertEquals("untrusted", judge(MeshIdentity.NONE, false, good, inter).verdict());
    assertEquals("untrusted", judge(none, false, good, inter, inter, inter, inter, inter).verdict());
    assertEquals("untrusted", judge(none, false).verdict());

    // the dialer checks the node it meant to reach
    PeerVerdict other = PeerVerdict.judge(none, new X509Certificate[] {good, inter}, true, "nd_01m8h8am533yn4w5g7dv6r9g5z", now);
    assertEquals("untrusted", other.verdict());
    assertTrue(other.reason().contains("not node nd_01m8h8am533yn4w5g7dv6r9g5z"), other.reason());
    assertEquals("trusted", PeerVerdict.judge(none, new X509Certificate[] {good, inter}, true, "nd_01m8h8am5a5dqx1dz52m47v2dx", now).verdict());
  }
}
