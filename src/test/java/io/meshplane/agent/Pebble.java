package io.meshplane.agent;

import io.meshplane.testing.Await;
import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.net.DatagramSocket;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Date;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The real pebble ACME test server ({@code /usr/bin/pebble}, Debian) on loopback, with
 * {@code pebble-challtestsrv} as its DNS server answering every name with 127.0.0.1 (so its HTTP-01
 * validation really connects to the agent's ingress listener, on the port given as {@code httpPort}).
 * Random ports; its directory's TLS certificate is made here (the agent trusts it with {@code --acme-trust}).
 */
final class Pebble implements AutoCloseable {
  final Path dir;
  final Path trustPem;
  final int port;
  final int managementPort;
  private final Path key;
  private Process dns;
  private Process pebble;
  private final SSLContext trust;

  static boolean installed() {
    return Files.isExecutable(Path.of("/usr/bin/pebble")) && Files.isExecutable(Path.of("/usr/bin/pebble-challtestsrv"));
  }

  /** Makes the directory's certificate and picks the ports; {@link #start} runs the servers. */
  Pebble(Path dir) throws Exception {
    this.dir = dir;
    Files.createDirectories(dir);
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(256);
    KeyPair kp = g.generateKeyPair();
    X500Name name = new X500Name("CN=pebble directory (test)");
    long now = System.currentTimeMillis();
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(name, BigInteger.valueOf(now), new Date(now - 60_000),
        new Date(now + 86_400_000L), name, kp.getPublic());
    b.addExtension(Extension.subjectAlternativeName, false,
        new GeneralNames(new GeneralName[] {new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost")}));
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    X509Certificate cert = new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(kp.getPrivate())));
    trustPem = dir.resolve("directory-cert.pem");
    Files.writeString(trustPem, pem(cert));
    key = dir.resolve("directory-key.pem");
    Files.writeString(key, pem(new org.bouncycastle.openssl.jcajce.JcaPKCS8Generator(kp.getPrivate(), null).generate()));
    trust = trusting(cert);
    port = freeTcpPort();
    managementPort = freeTcpPort();
  }

  /** @param httpPort where pebble dials for HTTP-01: the agent's plain ingress port */
  void start(int httpPort) throws Exception {
    int dnsPort = freeUdpPort();
    int dnsManagement = freeTcpPort();
    dns = new ProcessBuilder("/usr/bin/pebble-challtestsrv", "-dns01", "127.0.0.1:" + dnsPort, "-http01", "", "-https01", "", "-tlsalpn01", "",
        "-management", "127.0.0.1:" + dnsManagement, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "")
        .redirectErrorStream(true).redirectOutput(dir.resolve("challtestsrv.log").toFile()).start();
    Path config = dir.resolve("pebble-config.json");
    Files.writeString(config, "{\"pebble\":{\"listenAddress\":\"127.0.0.1:" + port + "\",\"managementListenAddress\":\"127.0.0.1:" + managementPort
        + "\",\"certificate\":\"" + trustPem + "\",\"privateKey\":\"" + key + "\",\"httpPort\":" + httpPort + ",\"tlsPort\":" + freeTcpPort()
        + ",\"ocspResponderURL\":\"\",\"externalAccountBindingRequired\":false}}");
    ProcessBuilder pb = new ProcessBuilder("/usr/bin/pebble", "-config", config.toString(), "-dnsserver", "127.0.0.1:" + dnsPort)
        .redirectErrorStream(true).redirectOutput(dir.resolve("pebble.log").toFile());
    pb.environment().put("PEBBLE_VA_NOSLEEP", "1");
    pb.environment().put("PEBBLE_WFE_NONCEREJECT", "0");
    pb.environment().remove("PEBBLE_VA_ALWAYS_VALID");
    pebble = pb.start();
    Await.until("pebble's directory answers", 20_000, () -> {
      try {
        return get("https://127.0.0.1:" + port + "/dir").statusCode() == 200;
      } catch (IOException e) {
        return false;
      }
    });
  }

  String directory() {
    return "https://127.0.0.1:" + port + "/dir";
  }

  /** The root that signs what pebble issues (regenerated at every start), from its management port. */
  X509Certificate root() throws Exception {
    HttpResponse<String> r = get("https://127.0.0.1:" + managementPort + "/roots/0");
    if (r.statusCode() != 200) throw new IOException("/roots/0: " + r.statusCode());
    return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(new java.io.ByteArrayInputStream(r.body().getBytes()));
  }

  String log() throws IOException {
    return Files.readString(dir.resolve("pebble.log"));
  }

  private HttpResponse<String> get(String url) throws IOException {
    HttpClient c = HttpClient.newBuilder().sslContext(trust).connectTimeout(Duration.ofSeconds(5)).build();
    try {
      return c.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  static SSLContext trusting(X509Certificate... certs) throws Exception {
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    for (int i = 0; i < certs.length; i++) ks.setCertificateEntry("c" + i, certs[i]);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ks);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }

  private static String pem(Object o) throws IOException {
    StringWriter w = new StringWriter();
    try (JcaPEMWriter p = new JcaPEMWriter(w)) {
      p.writeObject(o);
    }
    return w.toString();
  }

  private static int freeTcpPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static int freeUdpPort() throws IOException {
    try (DatagramSocket s = new DatagramSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() {
    for (Process p : new Process[] {pebble, dns}) {
      if (p == null) continue;
      p.destroy();
      try {
        if (!p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) p.destroyForcibly();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
