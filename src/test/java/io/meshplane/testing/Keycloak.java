package io.meshplane.testing;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A real Keycloak for the single sign-on tests: the distribution Maven unpacked into target/keycloak
 * (pom.xml, maven-dependency-plugin), started in dev mode on free ports of 127.0.0.2 (another site
 * than the panel's 127.0.0.1, so the browser treats the IdP's redirects as cross-site, as in
 * production), with an in-memory H2 database (nothing left on disk) and the test realm of
 * src/test/resources/keycloak/meshplane-realm.json imported at start. Keycloak needs Java 21 or
 * later: the newest JDK of /usr/lib/jvm (or {@code KEYCLOAK_JAVA_HOME}) runs it.
 */
public final class Keycloak implements AutoCloseable {
  public static final String HOST = "127.0.0.2";
  public static final String REALM = "meshplane";
  public static final String CLIENT_ID = "meshplane-panel";
  public static final String PASSWORD = "Keycloak-test-password-1";

  private final Process process;
  private final int port;
  private final String clientSecret;
  private final Path log;
  /** How long the start took, until the realm's discovery document answered. */
  public final Duration startTime;

  private Keycloak(Process process, int port, String clientSecret, Path log, Duration startTime) {
    this.process = process;
    this.port = port;
    this.clientSecret = clientSecret;
    this.log = log;
    this.startTime = startTime;
  }

  /**
   * Starts Keycloak with the test realm whose client accepts {@code redirectUri} (the panel's
   * callback) and sends people back to {@code postLogoutUri} after a logout at the IdP.
   */
  public static Keycloak start(String redirectUri, String postLogoutUri) throws IOException {
    Path home = home();
    Path javaHome = javaHome();
    int port = FreePorts.next();
    int management = FreePorts.next();
    String secret = "secret-" + Long.toHexString(System.nanoTime());
    String realm;
    try (InputStream in = Keycloak.class.getResourceAsStream("/keycloak/meshplane-realm.json")) {
      realm = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    realm = realm.replace("@CLIENT_SECRET@", secret).replace("@REDIRECT_URI@", redirectUri).replace("@POST_LOGOUT_URI@", postLogoutUri)
        .replace("@PASSWORD@", PASSWORD);
    Path imports = home.resolve("data/import");
    Files.createDirectories(imports);
    try (Stream<Path> old = Files.list(imports)) {
      for (Path p : old.toList()) Files.delete(p);
    }
    Files.writeString(imports.resolve("meshplane-realm.json"), realm);
    Path log = Path.of("target", "keycloak-" + port + ".log").toAbsolutePath();
    List<String> cmd = new ArrayList<>(List.of("bash", home.resolve("bin/kc.sh").toString(), "start-dev", "--http-host=" + HOST,
        "--http-port=" + port, "--http-management-port=" + management, "--hostname-strict=false", "--health-enabled=true",
        "--db=dev-mem", "--import-realm", "--log-level=WARN,org.keycloak.services:INFO,io.quarkus:INFO"));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("JAVA_HOME", javaHome.toString());
    // Java 24+: Keycloak's threads need java.lang opened (else its worker threads fail to start)
    pb.environment().put("JAVA_OPTS_APPEND", "-Xms64m -Xmx768m --add-opens=java.base/java.lang=ALL-UNNAMED");
    long started = System.nanoTime();
    Process process = pb.start();
    Keycloak kc = new Keycloak(process, port, secret, log, Duration.ZERO);
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    try {
      Await.until("Keycloak ready on " + HOST + ":" + port + " (log: " + log + ")", 240_000, () -> {
        if (!process.isAlive()) throw new IllegalStateException("Keycloak exited with " + process.exitValue() + "; see " + log);
        return ok(http, "http://" + HOST + ":" + management + "/health/ready") && ok(http, kc.issuer() + "/.well-known/openid-configuration");
      });
    } catch (RuntimeException e) {
      kc.close();
      throw e;
    }
    return new Keycloak(process, port, secret, log, Duration.ofNanos(System.nanoTime() - started));
  }

  private static boolean ok(HttpClient http, String url) {
    try {
      return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.discarding())
          .statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** The unpacked distribution: target/keycloak/keycloak-<version>. */
  static Path home() throws IOException {
    Path root = Path.of("target", "keycloak").toAbsolutePath();
    if (!Files.isDirectory(root)) {
      throw new IllegalStateException(root + " is missing: `mvn verify` unpacks Keycloak there (process-test-resources)");
    }
    try (Stream<Path> dirs = Files.list(root)) {
      return dirs.filter(p -> p.getFileName().toString().startsWith("keycloak-") && Files.exists(p.resolve("bin/kc.sh"))).findFirst()
          .orElseThrow(() -> new IllegalStateException("no keycloak-<version>/bin/kc.sh under " + root));
    }
  }

  /** A JDK of version 21 or later: {@code KEYCLOAK_JAVA_HOME}, else the newest one under /usr/lib/jvm. */
  static Path javaHome() throws IOException {
    String set = System.getenv("KEYCLOAK_JAVA_HOME");
    if (set != null && !set.isBlank()) return Path.of(set);
    Path jvms = Path.of("/usr/lib/jvm");
    if (Files.isDirectory(jvms)) {
      try (Stream<Path> all = Files.list(jvms)) {
        return all.filter(p -> Files.isExecutable(p.resolve("bin/java")) && version(p) >= 21).max(Comparator.comparingInt(Keycloak::version))
            .orElseThrow(Keycloak::noJdk);
      }
    }
    throw noJdk();
  }

  private static IllegalStateException noJdk() {
    return new IllegalStateException("Keycloak needs a JDK 21 or later: none under /usr/lib/jvm (set KEYCLOAK_JAVA_HOME; .ci/run installs one)");
  }

  private static int version(Path jdk) {
    try {
      for (String line : Files.readAllLines(jdk.resolve("release"))) {
        if (line.startsWith("JAVA_VERSION=")) {
          String v = line.substring("JAVA_VERSION=".length()).replace("\"", "");
          return Integer.parseInt(v.split("[.+-]")[0]);
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }

  public String issuer() {
    return "http://" + HOST + ":" + port + "/realms/" + REALM;
  }

  public String clientSecret() {
    return clientSecret;
  }

  public Path log() {
    return log;
  }

  @Override
  public void close() {
    process.descendants().forEach(ProcessHandle::destroy);
    process.destroy();
    try {
      if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly().waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
