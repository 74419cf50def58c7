package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * ACME against the real pebble: a route with {@code tls: acme} makes the agent obtain a certificate for
 * its hostname, pebble validating HTTP-01 by connecting to the agent's plain ingress listener (names
 * resolved by pebble-challtestsrv to 127.0.0.1); a TLS request through the ingress TLS listener, its
 * SNI naming the host, verifies against pebble's root (from its management port) and reaches the
 * target; the serial is reported per route; the certificate is renewed (forced early) and the new one
 * served from the next handshake.
 */
@Timeout(150)
class IngressAcmeTest {
  private static final String HOST = "shop.example.com";
  @TempDir Path dir;

  record Tls(X509Certificate leaf, IngressFixture.Answer answer) {}

  static Tls request(SSLContext ctx, int port, String sni) throws IOException {
    Socket plain = new Socket("127.0.0.1", port);
    SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(plain, sni, port, true);
    SSLParameters p = s.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host
    p.setServerNames(List.of(new SNIHostName(sni)));
    s.setSSLParameters(p);
    try (IngressFixture.Raw raw = new IngressFixture.Raw(s)) {
      s.startHandshake();
      X509Certificate leaf = (X509Certificate) s.getSession().getPeerCertificates()[0];
      return new Tls(leaf, raw.exchange("GET", "/secure", sni));
    }
  }

  private static String serial(IngressFixture f, String route) {
    JsonObject r = f.lastReport();
    if (r == null || !(r.getValue("routes") instanceof JsonObject routes) || !(routes.getValue(route) instanceof JsonObject c)) return null;
    return c.getString("serial");
  }

  @Test
  void anAcmeFailureIsReportedAsTheCoordinatorTakesIt() {
    assertEquals("http-01 failed:  connection refused", IngressCounters.reportable("http-01 failed:\r\nconnection refused"));
    String long300 = "e".repeat(300);
    assertEquals(IngressCounters.ACME_ERROR_MAX, IngressCounters.reportable(long300).length());
    // a cut never leaves half a surrogate pair
    String emoji = "x".repeat(IngressCounters.ACME_ERROR_MAX - 1) + "\uD83D\uDE00";
    assertEquals(IngressCounters.ACME_ERROR_MAX - 1, IngressCounters.reportable(emoji).length());
    assertTrue(!IngressCounters.reportable("\n\t").isBlank());
  }

  @Test
  void aCertificateThatCannotBeObtainedIsReportedAsTheRoutesAcmeError() throws Exception {
    int closed;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"),
        IngressFixture.plain().withTls("127.0.0.1", 0).withAcme(URI.create("https://127.0.0.1:" + closed + "/dir"), null, 0))) {
      f.nodeId();
      String id = IngressFixture.routeId();
      f.serve("1", IngressFixture.route(id, HOST, "/", IngressFixture.MESH_A, a.port()).put("tls", "acme"));
      Await.until("the route's acme_error reported", 30_000, () -> {
        JsonObject r = f.lastReport();
        return r != null && r.getJsonObject("routes").getJsonObject(id).getString("acme_error") != null;
      });
      JsonObject r = f.lastReport().getJsonObject("routes").getJsonObject(id);
      assertEquals(null, r.getValue("serial"), r.encode());
      assertTrue(!r.getString("acme_error").isBlank(), r.encode());
      assertTrue(r.getString("acme_error").length() <= IngressCounters.ACME_ERROR_MAX, r.encode());
      assertTrue(r.getString("acme_error").chars().noneMatch(Character::isISOControl), r.encode());
      assertTrue(r.containsKey("not_after") && r.getValue("not_after") == null, r.encode());
      // the failed orders are counted by hostname on /metrics; no certificate, no expiry series
      String m = f.metrics();
      AgentProcessTest.promtool(m);
      assertTrue(f.metric("mesh_ingress_acme_failures_total{hostname=\"" + HOST + "\"}") >= 1, m);
      assertTrue(m.contains("# TYPE mesh_ingress_certificate_expiry_seconds gauge"), m);
      assertTrue(m.lines().noneMatch(l -> l.startsWith("mesh_ingress_certificate_expiry_seconds{")), m);
      // the plain listener still serves the route
      try (IngressFixture.Raw c = new IngressFixture.Raw(f.port())) {
        assertEquals(200, c.exchange("GET", "/", HOST).status());
      }
    }
  }

  @Test
  void aCertificateIsObtainedOverHttp01ServedBySniVerifiedWithPebblesRootAndRenewed() throws Exception {
    assertTrue(Pebble.installed(), "pebble is not installed (/usr/bin/pebble, /usr/bin/pebble-challtestsrv): bash .ci/run installs it");
    try (Pebble pebble = new Pebble(dir.resolve("pebble")); IngressFixture.Target a = new IngressFixture.Target("a");
        IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain().withTls("127.0.0.1", 0)
            .withAcme(URI.create(pebble.directory()), pebble.trustPem, 8_000))) {
      pebble.start(f.port());
      f.nodeId();
      String id = IngressFixture.routeId();
      f.serve("1", IngressFixture.route(id, HOST, "/", IngressFixture.MESH_A, a.port()).put("tls", "acme"));
      Await.until("a certificate serial reported for the route", 60_000, () -> serial(f, id) != null);
      String first = serial(f, id);
      assertTrue(pebble.log().contains(HOST), "pebble validated the name:\n" + pebble.log());

      SSLContext trustingPebble = Pebble.trusting(pebble.root());
      Tls t = request(trustingPebble, f.agent.ingress().tlsPort(), HOST);
      assertEquals(first, t.leaf().getSerialNumber().toString(16), "the certificate served is the one reported");
      // its expiry, reported per route in seconds and on /metrics by hostname
      long notAfter = t.leaf().getNotAfter().getTime() / 1000;
      assertEquals(notAfter, f.lastReport().getJsonObject("routes").getJsonObject(id).getLong("not_after"));
      double left = f.metric("mesh_ingress_certificate_expiry_seconds{hostname=\"" + HOST + "\",source=\"acme\"}");
      assertTrue(Math.abs(left - (notAfter - System.currentTimeMillis() / 1000.0)) < 60, "expiry " + left);
      assertEquals(200, t.answer().status(), t.answer().body());
      assertEquals("a", t.answer().json().getString("server"));
      assertEquals("https", t.answer().json().getJsonObject("headers").getString("x-forwarded-proto"));

      // a name the agent holds no certificate for: no handshake
      assertThrows(IOException.class, () -> request(trustingPebble, f.agent.ingress().tlsPort(), "other.example.com"));

      // renewal (forced to 8 s after issuance here; 2/3 of the lifetime otherwise): a new serial, served from the next handshake
      Await.until("the renewed certificate reported", 60_000, () -> serial(f, id) != null && !first.equals(serial(f, id)));
      String second = serial(f, id);
      // a fresh client context: a resumed TLS session would show the certificate of the session it resumes
      assertEquals(second, request(Pebble.trusting(pebble.root()), f.agent.ingress().tlsPort(), HOST).leaf().getSerialNumber().toString(16));
      Await.until("both TLS requests counted", 15_000, () -> f.lastReport().getJsonObject("routes").getJsonObject(id).getLong("requests") >= 2);
      JsonObject report = f.lastReport().getJsonObject("routes").getJsonObject(id);
      assertTrue(!report.containsKey("acme_error"), report.encode());
    }
  }
}
