package io.meshplane.meshca;

import io.meshplane.common.Durations;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.openssl.PEMException;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.util.io.pem.PemObject;
import org.bouncycastle.util.io.pem.PemReader;

/**
 * MeshCA with a root kept outside the coordinator (OPERATIONS "MeshCA with an offline root"): what
 * {@code meshplane ca init|sign|show} do, on files. The root and the intermediate are built by
 * {@link Pki}, the same builders as the embedded hierarchy's, so both have one profile. Nothing here
 * prints or logs a passphrase or a private key.
 */
final class OfflineCa {
  static final String ROOT_CERT = "root.pem";
  static final String ROOT_KEY = "root-key.pem";
  static final int MIN_PASSPHRASE = 12;
  static final Duration MAX_LIFETIME = Duration.ofDays(100 * 365);
  /** Larger than any certificate or CSR this works with; a bigger file is not one. */
  static final int MAX_FILE_BYTES = 64 * 1024;
  private static final Pattern TRUST_DOMAIN = Pattern.compile("^[a-z0-9]([a-z0-9._-]{0,253}[a-z0-9])?$");
  private static final Pattern YEARS = Pattern.compile("^(\\d{1,3})y$");
  private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> READABLE = PosixFilePermissions.fromString("rw-r--r--");

  /** A refusal: nothing was written; the message names what is wrong, on one line. */
  static final class Refused extends RuntimeException {
    Refused(String message) {
      super(message, null, false, false);
    }
  }

  /** What {@code ca show} found: the text, and what is wrong when a certificate was checked against a root. */
  record Shown(String text, Optional<String> problem) {}

  private OfflineCa() {}

  /** {@code 10y} (365 days a year), or the duration syntax of the settings ({@code 90d}, {@code 12h}). */
  static Duration lifetime(String text, String option) {
    Matcher y = YEARS.matcher(text == null ? "" : text.trim());
    Duration d;
    try {
      d = y.matches() ? Duration.ofDays(365L * Integer.parseInt(y.group(1))) : Durations.parse(text);
    } catch (IllegalArgumentException e) {
      throw new Refused(option + ": '" + text + "' is not a lifetime (write e.g. 10y, 90d, 12h)");
    }
    if (d.compareTo(Duration.ofHours(1)) < 0 || d.compareTo(MAX_LIFETIME) > 0) throw new Refused(option + ": must be between 1h and 100y");
    return d;
  }

  /** Makes the root: its key, encrypted with the passphrase, and its self-signed certificate, as two new files (0600) in {@code dir}. */
  static String init(Path dir, String trustDomain, Duration lifetime, Supplier<char[]> passphrase) throws IOException {
    if (!TRUST_DOMAIN.matcher(trustDomain).matches()) {
      throw new Refused("--trust-domain: '" + trustDomain + "' is not a trust domain (lower-case letters, digits, '.', '-', '_')");
    }
    Path cert = dir.resolve(ROOT_CERT);
    Path keyFile = dir.resolve(ROOT_KEY);
    for (Path p : List.of(cert, keyFile)) {
      if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) throw new Refused(p + " exists already: ca init never writes over a root");
    }
    char[] pass = passphrase.get();
    String keyPem;
    X509CertificateHolder root;
    try {
      if (Character.codePointCount(pass, 0, pass.length) < MIN_PASSPHRASE) {
        throw new Refused("the passphrase is shorter than " + MIN_PASSPHRASE + " characters");
      }
      KeyPair pair = Pki.p256();
      root = Pki.root(pair, "MeshCA root " + trustDomain + " " + Ids.next("ca"), Instant.now(), lifetime);
      keyPem = RootKeyFile.encrypt(pair.getPrivate(), pass);
    } finally {
      Arrays.fill(pass, '\0');
    }
    if (!Files.isDirectory(dir)) Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    writeNew(keyFile, keyPem, OWNER_ONLY);
    try {
      writeNew(cert, Pki.pem(root), OWNER_ONLY);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(keyFile); // no key without its certificate
      throw e;
    }
    return "MeshCA root written: " + cert + " (certificate) and " + keyFile + " (private key, encrypted with the passphrase), both mode 0600;"
        + " keep " + dir + " offline\n" + CertificateText.describe(root);
  }

  /**
   * Signs the intermediate a coordinator asked for in {@code csrFile}: every name and extension of the
   * CSR is ignored, the certificate is the embedded intermediate's profile ({@link Pki#intermediate}),
   * never valid beyond the root. Written to {@code out}, a new file.
   */
  static String sign(Path dir, Path csrFile, Path out, Duration lifetime, Supplier<char[]> passphrase) throws IOException {
    X509CertificateHolder root = rootCertificate(dir);
    Instant now = Instant.now();
    if (!root.getNotAfter().toInstant().isAfter(now)) throw new Refused("the root " + dir.resolve(ROOT_CERT) + " expired at " + root.getNotAfter().toInstant());
    if (Files.exists(out, LinkOption.NOFOLLOW_LINKS)) throw new Refused("--out " + out + " exists already: ca sign never writes over a file");
    SubjectPublicKeyInfo spki;
    try {
      byte[] raw = readBytes(csrFile, "--csr");
      // PEM, or DER (a SEQUENCE), which Csrs takes as base64
      boolean der = raw.length > 0 && raw[0] == 0x30;
      spki = Csrs.check(der ? java.util.Base64.getEncoder().encodeToString(raw) : new String(raw, StandardCharsets.US_ASCII));
    } catch (Refusal r) {
      throw new Refused("--csr " + csrFile + ": " + (r.errors().isEmpty() ? r.getMessage() : r.errors().get(0).message()));
    }
    if (spki.equals(root.getSubjectPublicKeyInfo())) throw new Refused("--csr " + csrFile + ": asks for the root's own key");
    PublicKey intermediateKey;
    PublicKey rootKey;
    try {
      JcaPEMKeyConverter keys = new JcaPEMKeyConverter().setProvider(Pki.BC);
      intermediateKey = keys.getPublicKey(spki);
      rootKey = keys.getPublicKey(root.getSubjectPublicKeyInfo());
    } catch (PEMException e) {
      throw new Refused("--csr " + csrFile + ": its key cannot be read (" + e.getMessage() + ")");
    }
    String keyPem = readText(dir.resolve(ROOT_KEY), "the root key");
    char[] pass = passphrase.get();
    PrivateKey signingKey;
    try {
      signingKey = RootKeyFile.decrypt(keyPem, pass, rootKey, dir.resolve(ROOT_KEY).toString());
    } finally {
      Arrays.fill(pass, '\0');
    }
    X509CertificateHolder inter = Pki.intermediate(intermediateKey, "MeshCA intermediate " + Pki.sha256Hex(spki.getEncoded()).substring(0, 16),
        root, signingKey, now, lifetime);
    Optional<String> problem = IntermediateCheck.check(x509(inter), x509(root), intermediateKey, now);
    if (problem.isPresent()) throw new IllegalStateException("the intermediate made does not pass its own check: " + problem.get());
    writeNew(out, Pki.pem(inter), READABLE);
    boolean capped = inter.getNotAfter().equals(root.getNotAfter());
    return "MeshCA intermediate written: " + out + (capped ? " (its lifetime is cut to the root's notAfter)" : "") + "\n"
        + CertificateText.describe(inter);
  }

  /** A certificate file (every certificate in it), or the root of {@code dir}; with both, the first certificate checked against the root. */
  static Shown show(Path dir, Path certFile) throws IOException {
    if (dir == null && certFile == null) throw new Refused("give --dir DIR (its root) or --cert FILE, or both (the certificate checked against the root)");
    X509CertificateHolder root = dir == null ? null : rootCertificate(dir);
    List<X509CertificateHolder> certs = certFile == null ? List.of(root) : certificates(certFile, "--cert");
    StringBuilder text = new StringBuilder();
    for (X509CertificateHolder c : certs) {
      if (text.length() > 0) text.append('\n');
      text.append(CertificateText.safeDescribe(c));
    }
    if (root == null || certFile == null) return new Shown(text.toString(), Optional.empty());
    Optional<String> problem = IntermediateCheck.check(x509(certs.get(0)), x509(root), null);
    text.append(problem.isPresent() ? "" : "  checked against " + dir.resolve(ROOT_CERT) + ": an intermediate of this root, valid now\n");
    return new Shown(text.toString(), problem);
  }

  static X509Certificate x509(X509CertificateHolder holder) {
    try {
      return new JcaX509CertificateConverter().getCertificate(holder);
    } catch (CertificateException e) {
      throw new Refused("a certificate the JDK does not read: " + e.getMessage());
    }
  }

  private static X509CertificateHolder rootCertificate(Path dir) throws IOException {
    Path file = dir.resolve(ROOT_CERT);
    if (!Files.exists(file)) throw new Refused(file + " does not exist: run ca init, or give the folder that holds the root");
    X509CertificateHolder root = certificates(file, "the root").get(0);
    BasicConstraints bc = BasicConstraints.fromExtensions(root.getExtensions());
    if (bc == null || !bc.isCA()) throw new Refused(file + " is not a CA certificate");
    if (!"ECDSA P-256".equals(Csrs.keyKind(root.getSubjectPublicKeyInfo()))) throw new Refused(file + " has no ECDSA P-256 key");
    return root;
  }

  /** Every CERTIFICATE of a PEM file; at least one. */
  static List<X509CertificateHolder> certificates(Path file, String what) throws IOException {
    String text = readText(file, what);
    List<X509CertificateHolder> out = new ArrayList<>();
    try (PemReader r = new PemReader(new StringReader(text))) {
      for (PemObject o = r.readPemObject(); o != null; o = r.readPemObject()) {
        if (!"CERTIFICATE".equals(o.getType())) throw new Refused(what + " " + file + " holds a PEM " + o.getType() + ", not a CERTIFICATE");
        out.add(new X509CertificateHolder(o.getContent()));
      }
    } catch (IOException | RuntimeException e) {
      if (e instanceof Refused refused) throw refused;
      throw new Refused(what + " " + file + " is not a readable PEM certificate");
    }
    if (out.isEmpty()) throw new Refused(what + " " + file + " holds no PEM CERTIFICATE");
    return out;
  }

  private static String readText(Path file, String what) throws IOException {
    return new String(readBytes(file, what), StandardCharsets.US_ASCII);
  }

  private static byte[] readBytes(Path file, String what) throws IOException {
    byte[] bytes;
    try (InputStream in = Files.newInputStream(file)) {
      bytes = in.readNBytes(MAX_FILE_BYTES + 1);
    } catch (NoSuchFileException e) {
      throw new Refused(what + " " + file + " does not exist");
    }
    if (bytes.length > MAX_FILE_BYTES) throw new Refused(what + " " + file + " is larger than " + MAX_FILE_BYTES + " bytes");
    return bytes;
  }

  /** A new file with {@code permissions} from its creation on; refused when it exists. */
  private static void writeNew(Path file, String text, Set<PosixFilePermission> permissions) throws IOException {
    try {
      Files.write(Files.createFile(file, PosixFilePermissions.asFileAttribute(permissions)), text.getBytes(StandardCharsets.US_ASCII),
          StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
    } catch (FileAlreadyExistsException e) {
      throw new Refused(file + " exists already: never written over");
    }
    Files.setPosixFilePermissions(file, permissions); // the umask may have taken bits away; these are the ones meant
  }
}
