package io.meshplane.meshca;

import io.meshplane.module.StartRefused;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.generators.HKDFBytesGenerator;
import org.bouncycastle.crypto.params.HKDFParameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CA's private keys at rest: {@code meshca.secret} (the same on every replica, at least 32 bytes)
 * → HKDF-SHA256 → an AES-256-GCM key. A key is stored as {@code v1 ‖ nonce (12) ‖ ciphertext ‖ tag (16)}
 * with the authority's id as associated data, so a sealed key copied onto another row does not open.
 * Neither the secret nor a key is ever logged or kept in a field other than the derived AES key.
 */
final class KeyVault {
  private static final Logger LOG = LoggerFactory.getLogger(KeyVault.class);
  static final byte V1 = 1;
  static final int MIN_SECRET_BYTES = 32;
  private static final int NONCE = 12;
  private static final int TAG_BITS = 128;
  private static final byte[] SALT = "meshplane meshca key vault".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] INFO = "v1 aes-256-gcm".getBytes(StandardCharsets.US_ASCII);

  /** A sealed key that does not open: another secret, another row, or altered bytes. */
  static final class WrongSecret extends Exception {
    WrongSecret(String message) {
      super(message, null, false, false);
    }
  }

  private final SecretKey key;
  private final SecureRandom random = new SecureRandom();

  KeyVault(byte[] secret) {
    if (secret == null || secret.length < MIN_SECRET_BYTES) {
      throw new IllegalArgumentException("the MeshCA secret must hold at least " + MIN_SECRET_BYTES + " bytes");
    }
    HKDFBytesGenerator hkdf = new HKDFBytesGenerator(new SHA256Digest());
    hkdf.init(new HKDFParameters(secret, SALT, INFO));
    byte[] k = new byte[32];
    hkdf.generateBytes(k, 0, k.length);
    this.key = new SecretKeySpec(k, "AES");
    Arrays.fill(k, (byte) 0);
  }

  /** Seals {@code plain} (a PKCS#8 private key) for the row {@code authorityId}. */
  byte[] seal(String authorityId, byte[] plain) {
    byte[] nonce = new byte[NONCE];
    random.nextBytes(nonce);
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, nonce));
      c.updateAAD(authorityId.getBytes(StandardCharsets.UTF_8));
      byte[] sealed = c.doFinal(plain);
      byte[] out = new byte[1 + NONCE + sealed.length];
      out[0] = V1;
      System.arraycopy(nonce, 0, out, 1, NONCE);
      System.arraycopy(sealed, 0, out, 1 + NONCE, sealed.length);
      return out;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM is not available: " + e.getClass().getSimpleName());
    }
  }

  /** Opens what {@link #seal} made for {@code authorityId}; {@link WrongSecret} when it does not open. */
  byte[] open(String authorityId, byte[] sealed) throws WrongSecret {
    if (sealed == null || sealed.length < 1 + NONCE + TAG_BITS / 8 || sealed[0] != V1) {
      throw new WrongSecret("the sealed key of " + authorityId + " is not in the v1 format");
    }
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, sealed, 1, NONCE));
      c.updateAAD(authorityId.getBytes(StandardCharsets.UTF_8));
      return c.doFinal(sealed, 1 + NONCE, sealed.length - 1 - NONCE);
    } catch (javax.crypto.AEADBadTagException e) {
      throw new WrongSecret("the sealed key of " + authorityId + " does not open with this secret");
    } catch (GeneralSecurityException e) {
      throw new WrongSecret("the sealed key of " + authorityId + " does not open: " + e.getClass().getSimpleName());
    }
  }

  /**
   * The embedded default's secret when none is configured: read from {@code file}, or made there
   * (256 random bits, base64url, mode 0600) when it does not exist yet, as the embedded PostgreSQL's
   * password is. Replicas sharing one PostgreSQL need one secret: configure {@code meshca.secret}.
   */
  static byte[] fileSecret(Path file) {
    try {
      if (!Files.exists(file)) create(file);
      byte[] s = Files.readString(file, StandardCharsets.US_ASCII).strip().getBytes(StandardCharsets.UTF_8);
      if (s.length < MIN_SECRET_BYTES) {
        throw new StartRefused("meshca.secret: " + file + " (the generated secret, used when meshca.secret and meshca.secret_file are "
            + "unset) holds fewer than " + MIN_SECRET_BYTES + " bytes");
      }
      return s;
    } catch (IOException e) {
      throw new StartRefused("meshca.secret: cannot read or create " + file + " (the generated secret, used when meshca.secret and "
          + "meshca.secret_file are unset): " + e.getClass().getSimpleName());
    }
  }

  private static void create(Path file) throws IOException {
    byte[] raw = new byte[32];
    new SecureRandom().nextBytes(raw);
    String secret = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    Path dir = file.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp;
    try {
      tmp = Files.createTempFile(dir, ".meshca", ".tmp", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (UnsupportedOperationException e) {
      tmp = Files.createTempFile(dir, ".meshca", ".tmp");
    }
    try {
      Files.writeString(tmp, secret + "\n", StandardCharsets.US_ASCII);
      // a hard link never replaces: of two processes starting at the same moment, the first one's stays
      Files.createLink(file, tmp);
      LOG.info("meshca.secret is unset: generated the MeshCA secret in {} (mode 0600); replicas sharing a PostgreSQL need the same "
          + "secret: set meshca.secret on each", file);
    } catch (FileAlreadyExistsException e) {
      // another process made it first: use theirs
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
