package io.meshplane.auth;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.ECGenParameterSpec;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ES256 (P-256) signing keys in {@code auth.keys_dir}: {@code <kid>.private.pem} (PKCS#8) and
 * {@code <kid>.public.pem} (SPKI). Every public key verifies (so keys can be rotated: add a new pair,
 * keep the old public key until the tokens it signed have expired); the private key with the greatest
 * kid signs. An empty folder gets a fresh pair on first start, under a file lock so replicas sharing the
 * folder do not race. Key material is never logged.
 */
public final class SigningKeys {
  private static final Logger LOG = LoggerFactory.getLogger(SigningKeys.class);
  private static final DateTimeFormatter KID_TIME = DateTimeFormatter.ofPattern("yyyyMMddHHmmss").withZone(ZoneOffset.UTC);

  private final Map<String, String> publicPems;
  private final String signingKid;
  private final String signingPem;

  private SigningKeys(Map<String, String> publicPems, String signingKid, String signingPem) {
    this.publicPems = publicPems;
    this.signingKid = signingKid;
    this.signingPem = signingPem;
  }

  /** Loads the folder, generating a first key pair when it holds none. Blocking (start and CLI only). */
  public static SigningKeys loadOrCreate(Path dir) {
    try {
      // Existing keys are only read: in Kubernetes the folder is a read-only Secret mount.
      if (Files.isDirectory(dir) && !listKids(dir, ".public.pem").isEmpty()) return load(dir);
      Files.createDirectories(dir);
      try {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      } catch (UnsupportedOperationException ignored) {
        // not a POSIX file system
      }
      try (FileChannel ch = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
           FileLock ignored = ch.lock()) {
        if (listKids(dir, ".public.pem").isEmpty()) generate(dir);
        return load(dir);
      }
    } catch (IOException e) {
      throw new IllegalStateException("auth.keys_dir " + dir + ": " + e.getMessage(), e);
    }
  }

  private static List<String> listKids(Path dir, String suffix) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(suffix))
          .map(n -> n.substring(0, n.length() - suffix.length())).sorted().toList();
    }
  }

  private static SigningKeys load(Path dir) throws IOException {
    Map<String, String> publics = new TreeMap<>();
    for (String kid : listKids(dir, ".public.pem")) {
      publics.put(kid, Files.readString(dir.resolve(kid + ".public.pem"), StandardCharsets.US_ASCII));
    }
    List<String> privates = listKids(dir, ".private.pem");
    if (privates.isEmpty()) throw new IllegalStateException("auth.keys_dir " + dir + " holds no <kid>.private.pem to sign with");
    String kid = privates.get(privates.size() - 1);
    if (!publics.containsKey(kid)) throw new IllegalStateException("auth.keys_dir " + dir + ": " + kid + ".public.pem is missing");
    String pem = Files.readString(dir.resolve(kid + ".private.pem"), StandardCharsets.US_ASCII);
    LOG.info("signing keys: {} verifying, signing with kid {}", publics.size(), kid);
    return new SigningKeys(Map.copyOf(publics), kid, pem);
  }

  private static void generate(Path dir) throws IOException {
    KeyPair pair;
    try {
      KeyPairGenerator gen = KeyPairGenerator.getInstance("EC");
      gen.initialize(new ECGenParameterSpec("secp256r1"));
      pair = gen.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot generate a P-256 key: " + e.getMessage(), e);
    }
    String kid = "k" + KID_TIME.format(java.time.Instant.now()) + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
    writePrivate(dir.resolve(kid + ".private.pem"), pem("PRIVATE KEY", pair.getPrivate().getEncoded()));
    Files.writeString(dir.resolve(kid + ".public.pem"), pem("PUBLIC KEY", pair.getPublic().getEncoded()), StandardCharsets.US_ASCII);
    LOG.info("auth.keys_dir {} was empty: generated signing key {}", dir, kid);
  }

  private static void writePrivate(Path file, String pem) throws IOException {
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (UnsupportedOperationException e) {
      Files.createFile(file);
    }
    Files.writeString(file, pem, StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }

  public Map<String, String> publicPems() {
    return publicPems;
  }

  public String signingKid() {
    return signingKid;
  }

  String signingPem() {
    return signingPem;
  }
}
