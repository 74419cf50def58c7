package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.PublicKey;
import java.security.cert.X509Certificate;
import java.security.spec.X509EncodedKeySpec;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/**
 * The rotation drill's pair check ({@link SimPairs}) can fail, so its "0 failed" means something: A's
 * certificate from an authority outside B's bundle, or B's clock past A's notAfter, is counted failed;
 * offline nodes and nodes back but not yet current are left out, nodes back and current are counted
 * apart. And each simulated node's own certificate handling runs at its skewed clock ({@link AgentPki}).
 * Chains made here with BouncyCastle ({@link PeerVerdictTest#cert}); the meshca test helpers (TestCsrs,
 * OpenSsl) are package-private to io.meshplane.meshca.
 */
class SimPairsTest {
  static final long HOUR = 3_600_000;
  final long now = System.currentTimeMillis();
  final Ca ca = new Ca("one");
  final Ca unrelated = new Ca("two");

  /** A root and an intermediate under it. */
  record Ca(String name, KeyPair rootKey, X509Certificate root, KeyPair interKey, X509Certificate inter) {
    Ca(String name) {
      this(name, PeerVerdictTest.key(), PeerVerdictTest.key());
    }

    Ca(String name, KeyPair rootKey, KeyPair interKey) {
      this(name, rootKey, PeerVerdictTest.cert("CN=root " + name, rootKey.getPublic(), "CN=root " + name, rootKey.getPrivate(),
          System.currentTimeMillis() - 20 * HOUR, System.currentTimeMillis() + 100 * HOUR, true, null, null), interKey,
          PeerVerdictTest.cert("CN=inter " + name, interKey.getPublic(), "CN=root " + name, rootKey.getPrivate(),
              System.currentTimeMillis() - 10 * HOUR, System.currentTimeMillis() + 50 * HOUR, true, null, null));
    }

    JsonObject bundle() {
      return new JsonObject().put("version", "bundle-" + name).put("pem", pem(root));
    }
  }

  static String pem(X509Certificate c) {
    try {
      return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(c.getEncoded()) + "\n-----END CERTIFICATE-----\n";
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** A node at clock skew {@code skewMs} holding {@code ca}'s bundle and a certificate from it valid {@code from}..{@code to}. */
  AgentPki holding(long skewMs, Ca ca, long from, long to) throws Exception {
    AgentPki p = new AgentPki(skewMs);
    p.csr(); // the node's own key
    PublicKey pub = KeyFactory.getInstance("EC").generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(p.toJson().getString("public_key"))));
    X509Certificate leaf = PeerVerdictTest.cert("CN=leaf", pub, "CN=inter " + ca.name(), ca.interKey().getPrivate(), from, to, false, null, null);
    JsonObject c = new JsonObject().put("pem", pem(leaf)).put("chain", pem(ca.inter())).put("issuer", "inter-" + ca.name())
        .put("renew_after", Instant.ofEpochMilli(to - (to - from) / 2).toString()).put("wireguard_key", "wg");
    AgentPki.Applied a = p.apply(new JsonObject().put("bundle", ca.bundle()).put("certificate", c), now);
    assertTrue(a.adopted(), "adopted: " + a.refused());
    return p;
  }

  static AgentPki bundleOnly(long skewMs, Ca ca) {
    AgentPki p = new AgentPki(skewMs);
    p.apply(new JsonObject().put("bundle", ca.bundle()), System.currentTimeMillis());
    return p;
  }

  static AgentSession session(AgentPki p) {
    AgentSession s = new AgentSession("n", NodeKey.randomPublic(1).generate(), NodeKey.randomPublic(2), true, null, System.currentTimeMillis());
    s.usePki(p);
    return s;
  }

  /** 64 random pairs of {A, B}: B holds no certificate, so only A's under B's bundle is checked. */
  SimStats sample(AgentPki a, AgentPki b, byte[] presence) {
    SimStats stats = new SimStats(false);
    SimPairs.sample(new AgentSession[] {session(a), session(b)}, presence, slot -> 0, 64, stats, now);
    return stats;
  }

  @Test
  void aCertificateFromAnUnrelatedAuthorityFails() throws Exception {
    AgentPki a = holding(0, ca, now - HOUR, now + HOUR);
    SimStats same = sample(a, bundleOnly(0, ca), null);
    assertTrue(same.pairsChecked.sum() > 0);
    assertEquals(0, same.pairsFailed.sum());

    SimStats other = sample(a, bundleOnly(0, unrelated), null);
    assertTrue(other.pairsChecked.sum() > 0);
    assertEquals(other.pairsChecked.sum(), other.pairsFailed.sum(), "every check of A under an unrelated bundle fails");
    assertTrue(other.lastPairFailure.startsWith("untrusted"), other.lastPairFailure);
  }

  @Test
  void bsClockPastNotAfterFails() throws Exception {
    // A's certificate expires in 2 minutes: B 5 minutes ahead sees it expired, B 5 minutes behind does not
    AgentPki a = holding(0, ca, now - HOUR, now + 120_000);
    SimStats ahead = sample(a, bundleOnly(SimPairs.SKEW_MS, ca), null);
    assertTrue(ahead.pairsChecked.sum() > 0);
    assertEquals(ahead.pairsChecked.sum(), ahead.pairsFailed.sum());
    assertTrue(ahead.lastPairFailure.contains("untrusted"), ahead.lastPairFailure);
    assertEquals(0, sample(a, bundleOnly(-SimPairs.SKEW_MS, ca), null).pairsFailed.sum());
    // without --skew-clocks a node runs on the host's clock and the pair check adds its skew itself
    SimStats added = new SimStats(false);
    SimPairs.sample(new AgentSession[] {session(a), session(bundleOnly(0, ca))}, null, slot -> SimPairs.SKEW_MS, 64, added, now);
    assertTrue(added.pairsChecked.sum() > 0);
    assertEquals(added.pairsChecked.sum(), added.pairsFailed.sum(), "B's skew added by the caller");
    // a certificate issued just now (notBefore 5 minutes back, as MeshCA's) verifies at either extreme
    AgentPki fresh = holding(0, ca, now - SimPairs.SKEW_MS, now + HOUR);
    assertEquals(0, sample(fresh, bundleOnly(-SimPairs.SKEW_MS, ca), null).pairsFailed.sum());
    assertEquals(0, sample(fresh, bundleOnly(SimPairs.SKEW_MS, ca), null).pairsFailed.sum());
  }

  @Test
  void offlineAndNotYetCurrentNodesAreLeftOutAndReturnedOnesCountedApart() throws Exception {
    AgentPki a = holding(0, ca, now - HOUR, now + HOUR);
    AgentPki b = bundleOnly(0, unrelated);
    SimStats offline = sample(a, b, new byte[] {SimPairs.ONLINE, SimPairs.OFFLINE});
    assertEquals(0, offline.pairsChecked.sum() + offline.returnedPairsChecked.sum());
    SimStats pending = sample(a, b, new byte[] {SimPairs.RETURNED, SimPairs.ONLINE});
    assertEquals(0, pending.pairsChecked.sum() + pending.returnedPairsChecked.sum());
    SimStats back = sample(a, b, new byte[] {SimPairs.RECOVERED, SimPairs.ONLINE});
    assertEquals(0, back.pairsChecked.sum());
    assertTrue(back.returnedPairsChecked.sum() > 0);
    assertEquals(back.returnedPairsChecked.sum(), back.returnedPairsFailed.sum());
  }

  @Test
  void aNodeDecidesAtItsOwnClock() throws Exception {
    // renew_after half-way between notBefore (1 h back) and notAfter (1 h 8 min ahead): 4 minutes from now
    long to = now + HOUR + 8 * 60_000;
    AgentPki right = holding(0, ca, now - HOUR, to);
    AgentPki ahead = holding(SimPairs.SKEW_MS, ca, now - HOUR, to);
    AgentPki behind = holding(-SimPairs.SKEW_MS, ca, now - HOUR, to);
    // due for the node 5 minutes ahead only
    assertFalse(right.wantsCsr(now, "wg"));
    assertTrue(ahead.wantsCsr(now, "wg"));
    assertFalse(behind.wantsCsr(now, "wg"));
    assertEquals(right.expiresInSeconds(now) - 300, ahead.expiresInSeconds(now), 1);
    assertEquals("valid", ahead.verdict(now));
    assertNull(SimPairs.check(ahead, behind, now));
  }

  @Test
  void aBundleThatNoLongerHoldsTheChainAsksForARenewal() throws Exception {
    // a node back from offline: its certificate is from a root the new bundle no longer holds
    AgentPki p = holding(0, ca, now - HOUR, now + 10 * HOUR);
    assertFalse(p.wantsCsr(now, "wg"));
    AgentPki.Applied a = p.apply(new JsonObject().put("bundle", unrelated.bundle()), now);
    assertTrue(a.bundle());
    assertEquals("bundle-two", p.bundleVersionHeld());
    assertTrue(p.wantsCsr(now, "wg"), "renews at its next heartbeat");
  }
}
