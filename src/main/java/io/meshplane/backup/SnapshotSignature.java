package io.meshplane.backup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The snapshot signing key: Ed25519 (the JDK's own), a private key in PKCS#8 PEM ({@code PRIVATE KEY},
 * mode 0600) and its public key in SPKI PEM ({@code PUBLIC KEY}), the same files {@code openssl genpkey
 * -algorithm ed25519} writes. {@code manifest.sig} is the base64 of the signature of manifest.txt's
 * exact bytes. Key material is never printed.
 */
final class SnapshotSignature {
  static final String ALGORITHM = "Ed25519";
  private static final int MAX_PEM = 4096;
  private static final Pattern PEM = Pattern.compile("-----BEGIN ([A-Z ]+)-----\\r?\\n([A-Za-z0-9+/=\\r\\n]+)-----END \\1-----\\r?\\n?");

  private SnapshotSignature() {}

  static KeyPair generate() {
    try {
      return KeyPairGenerator.getInstance(ALGORITHM).generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK has no Ed25519: " + e.getMessage(), e);
    }
  }

  /** Writes a new file (never over an existing one); the private key with mode 0600. */
  static void write(Path file, String type, byte[] der, boolean secret) throws IOException {
    String pem = "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + type + "-----\n";
    Path abs = file.toAbsolutePath();
    if (abs.getParent() != null) Files.createDirectories(abs.getParent());
    try {
      if (secret) Files.createFile(abs, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      else Files.createFile(abs);
    } catch (FileAlreadyExistsException e) {
      throw new Refused(file + " exists already: keygen never writes over a key");
    }
    Files.writeString(abs, pem, StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
  }

  /**
   * @param option the option and environment variable that named the file, for the messages
   */
  static PrivateKey readPrivate(Path file, String option) {
    byte[] der = readPem(file, "PRIVATE KEY", option);
    try {
      return KeyFactory.getInstance(ALGORITHM).generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw new Refused(option + ": " + file + " is not an Ed25519 private key (make a pair with `meshplane snapshot keygen`)");
    }
  }

  static PublicKey readPublic(Path file, String option) {
    byte[] der = readPem(file, "PUBLIC KEY", option);
    try {
      return KeyFactory.getInstance(ALGORITHM).generatePublic(new X509EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw new Refused(option + ": " + file + " is not an Ed25519 public key (the .pub file `meshplane snapshot keygen` wrote)");
    }
  }

  private static byte[] readPem(Path file, String type, String option) {
    if (file == null) throw new Refused(option + " is not given");
    byte[] bytes;
    try {
      if (Files.size(file) > MAX_PEM) throw new Refused(option + ": " + file + " is not a " + type + " PEM file (too large)");
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new Refused(option + ": " + file + " does not exist");
    } catch (IOException e) {
      throw new Refused(option + ": " + file + " cannot be read: " + e.getMessage());
    }
    Matcher m = PEM.matcher(new String(bytes, StandardCharsets.US_ASCII).strip() + "\n");
    if (!m.matches() || !m.group(1).equals(type)) {
      throw new Refused(option + ": " + file + " is not a PEM file with one " + type + " block");
    }
    try {
      return Base64.getMimeDecoder().decode(m.group(2));
    } catch (IllegalArgumentException e) {
      throw new Refused(option + ": " + file + " is not valid base64 inside its PEM block");
    }
  }

  static String sign(PrivateKey key, byte[] data) {
    try {
      Signature s = Signature.getInstance(ALGORITHM);
      s.initSign(key);
      s.update(data);
      return Base64.getEncoder().encodeToString(s.sign()) + "\n";
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot sign: " + e.getMessage(), e);
    }
  }

  /** True when {@code sigFile} (the base64 text of manifest.sig) is {@code key}'s signature of {@code data}. */
  static boolean verify(PublicKey key, byte[] data, byte[] sigFile) {
    String text = new String(sigFile, StandardCharsets.US_ASCII);
    if (text.endsWith("\n")) text = text.substring(0, text.length() - 1);
    byte[] sig;
    try {
      sig = Base64.getDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      return false;
    }
    if (sig.length != 64) return false;
    try {
      Signature s = Signature.getInstance(ALGORITHM);
      s.initVerify(key);
      s.update(data);
      return s.verify(sig);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }
}
