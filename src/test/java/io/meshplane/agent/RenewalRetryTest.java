package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/**
 * A node whose certificate is due retries a failed heartbeat under a lower cap (a quarter of the time
 * the certificate has left, at most the interval, at least a second; the interval once expired), and
 * a CSR that got no answer goes out again at the next heartbeat: after a control-plane outage, the
 * nodes closest to expiry renew within seconds of the return instead of after the back-off's 60 s
 * cap (the outage drill of RESULTS.md). Nodes whose certificate is not due keep the normal back-off.
 */
class RenewalRetryTest {
  static final long HOUR = PeerVerdictTest.HOUR;
  static final long INTERVAL = 15_000;
  /** Whole seconds: a certificate's notAfter has no milliseconds. */
  final long now = System.currentTimeMillis() / 1000 * 1000;
  final KeyPair rootKey = PeerVerdictTest.key();
  final KeyPair interKey = PeerVerdictTest.key();
  final X509Certificate root = PeerVerdictTest.cert("CN=root", rootKey.getPublic(), "CN=root", rootKey.getPrivate(), now - 20 * HOUR, now + 100 * HOUR, true, null, null);
  final X509Certificate inter = PeerVerdictTest.cert("CN=inter", interKey.getPublic(), "CN=root", rootKey.getPrivate(), now - 10 * HOUR, now + 50 * HOUR, true, null, null);

  static String pem(X509Certificate c) {
    try {
      return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(c.getEncoded()) + "\n-----END CERTIFICATE-----\n";
    } catch (java.security.cert.CertificateEncodingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** An agent's state holding a certificate valid until {@code notAfter}, to renew after {@code renewAfter}. */
  AgentPki holding(long notAfter, long renewAfter) {
    KeyPair k = PeerVerdictTest.key();
    X509Certificate leaf = PeerVerdictTest.cert("CN=leaf", k.getPublic(), "CN=inter", interKey.getPrivate(), now - HOUR, notAfter, false,
        PeerVerdictTest.SPIFFE, null);
    JsonObject state = new JsonObject()
        .put("private_key", Base64.getEncoder().encodeToString(k.getPrivate().getEncoded()))
        .put("public_key", Base64.getEncoder().encodeToString(k.getPublic().getEncoded()))
        .put("bundle", new JsonObject().put("version", "b1").put("pem", pem(root)))
        .put("certificate", pem(leaf)).put("chain", pem(inter)).put("renew_after", Instant.ofEpochMilli(renewAfter).toString())
        .put("issued_for", "wg").put("issuer", "ca_1");
    AgentPki p = AgentPki.restore(state, now);
    assertTrue(p.holdsCertificate(), "the state restores its certificate");
    return p;
  }

  @Test
  void theRetryCapFollowsTheTimeTheCertificateHasLeft() {
    assertEquals(Long.MAX_VALUE, new AgentPki().retryCapMs(now, INTERVAL), "no certificate held: the normal back-off");
    assertEquals(Long.MAX_VALUE, holding(now + 3 * HOUR, now + HOUR).retryCapMs(now, INTERVAL), "not due: the normal back-off");
    AgentPki due = holding(now + 3 * HOUR, now - 1000);
    assertEquals(INTERVAL, due.retryCapMs(now, INTERVAL), "due with hours left: at most the interval");
    assertEquals(5_000, due.retryCapMs(now + 3 * HOUR - 20_000, INTERVAL), "20 s left: a quarter of it");
    assertEquals(1_000, due.retryCapMs(now + 3 * HOUR - 2_000, INTERVAL), "never below a second");
    assertEquals(INTERVAL, due.retryCapMs(now + 3 * HOUR + 1, INTERVAL), "expired (renewal within the grace): the interval");
  }

  @Test
  void theBackOffAndRetryAfterTakeTheLowerCap() {
    Backoff b = new Backoff(1000, () -> 1.0);
    Reply down = Reply.failure(new java.net.ConnectException("Connection refused"));
    Pacing normal = new Pacing();
    Pacing urgent = new Pacing();
    long n = 0;
    long u = 0;
    for (int i = 0; i < 20; i++) {
      n = normal.afterFailure(down, b, 1, INTERVAL);
      u = urgent.afterFailure(down, b, 1, INTERVAL, 5_000);
    }
    assertEquals(60_000, n, "the normal cap: max(interval, 60 s)");
    assertEquals(5_000, u, "the certificate's cap");
    Reply busy = new Reply(503, null, "http_503", null, 30_000, 0);
    assertEquals(5_000, new Pacing().afterFailure(busy, new Backoff(1000, () -> 0.0), 1, INTERVAL, 5_000), "Retry-After within the cap too");
    assertEquals(30_000, new Pacing().afterFailure(busy, new Backoff(1000, () -> 0.0), 1, INTERVAL), "Retry-After honoured otherwise");
  }

  @Test
  void aCsrThatGotNoAnswerGoesOutAgainAtTheNextHeartbeat() {
    AgentPki p = holding(now + 3 * HOUR, now - 1000);
    StringBuilder first = new StringBuilder();
    p.write(first, now, "wg");
    assertTrue(first.toString().contains("\"csr\""), first.toString());
    assertFalse(p.wantsCsr(now + 1000, "wg"), "one CSR in flight: held back while its answer may come");
    p.unanswered();
    assertTrue(p.wantsCsr(now + 1000, "wg"), "no answer came: the next heartbeat carries it again");

    // an answer (a deferral here) ends the flight: a later failure does not lift the answer's own wait
    StringBuilder second = new StringBuilder();
    p.write(second, now + 1000, "wg");
    p.apply(new JsonObject().put("deferred", new JsonObject().put("retry_after_s", 20)), now + 1500);
    p.unanswered();
    assertFalse(p.wantsCsr(now + 2000, "wg"), "the deferral's 20 s stand");
    assertTrue(p.wantsCsr(now + 22_000, "wg"));
  }
}
