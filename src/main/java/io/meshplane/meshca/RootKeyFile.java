package io.meshplane.meshca;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import org.bouncycastle.asn1.nist.NISTObjectIdentifiers;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.crypto.util.ScryptConfig;
import org.bouncycastle.openssl.PKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.OutputEncryptor;
import org.bouncycastle.pkcs.PKCS8EncryptedPrivateKeyInfo;
import org.bouncycastle.pkcs.PKCSException;
import org.bouncycastle.pkcs.jcajce.JcePKCSPBEInputDecryptorProviderBuilder;
import org.bouncycastle.pkcs.jcajce.JcePKCSPBEOutputEncryptorBuilder;
import org.bouncycastle.util.io.pem.PemGenerationException;
import org.bouncycastle.util.io.pem.PemObject;
import org.bouncycastle.util.io.pem.PemReader;

/**
 * The offline root's private key at rest: an encrypted PKCS#8 PEM ({@code ENCRYPTED PRIVATE KEY}),
 * PBES2 with scrypt and AES-256-CBC, which {@code openssl pkey} reads with the passphrase.
 *
 * <p>scrypt's cost: N = 2^14, r = 8, p = 5 (16 MiB, about 0.7 s here). OpenSSL refuses to derive a
 * PKCS#8 key with scrypt above 32 MiB (N = 2^15 and r = 8 is already over it: "memory limit
 * exceeded"), so the larger N of OWASP's first choice (2^17, r = 8, p = 1) would make a file openssl
 * cannot open; p = 5 at N = 2^14 is OWASP's equivalent of it in work.
 */
final class RootKeyFile {
  static final int SCRYPT_N = 1 << 14;
  static final int SCRYPT_R = 8;
  static final int SCRYPT_P = 5;
  static final int SALT_BYTES = 16;
  static final String PEM_TYPE = "ENCRYPTED PRIVATE KEY";

  private RootKeyFile() {}

  /** The key, encrypted with {@code passphrase}, as PEM. */
  static String encrypt(PrivateKey key, char[] passphrase) {
    try {
      OutputEncryptor encryptor = new JcePKCSPBEOutputEncryptorBuilder(
          new ScryptConfig.Builder(SCRYPT_N, SCRYPT_R, SCRYPT_P).withSaltLength(SALT_BYTES).build(), NISTObjectIdentifiers.id_aes256_CBC)
          .setProvider(Pki.BC).build(passphrase);
      PemObject pem = new PKCS8Generator(PrivateKeyInfo.getInstance(key.getEncoded()), encryptor).generate();
      return Pki.pem(pem.getType(), pem.getContent());
    } catch (OperatorCreationException | PemGenerationException e) {
      throw new IllegalStateException("cannot encrypt the root key: " + e.getMessage());
    }
  }

  /**
   * The key in {@code pem}, decrypted with {@code passphrase}, once it is shown to be the private key of
   * {@code expected} (the root certificate's key).
   *
   * @param shown how messages name the file
   * @throws OfflineCa.Refused when the text is not an encrypted key, the passphrase does not open it, or
   *     it is another key than the root's
   */
  static PrivateKey decrypt(String pem, char[] passphrase, PublicKey expected, String shown) {
    PKCS8EncryptedPrivateKeyInfo info;
    try (PemReader r = new PemReader(new StringReader(pem))) {
      PemObject o = r.readPemObject();
      if (o == null || !PEM_TYPE.equals(o.getType())) {
        throw new OfflineCa.Refused(shown + " is not an encrypted PKCS#8 key (PEM " + PEM_TYPE + ")");
      }
      info = new PKCS8EncryptedPrivateKeyInfo(o.getContent());
    } catch (IOException | RuntimeException e) {
      if (e instanceof OfflineCa.Refused refused) throw refused;
      throw new OfflineCa.Refused(shown + " is not a readable encrypted PKCS#8 key");
    }
    PrivateKey key;
    try {
      PrivateKeyInfo plain = info.decryptPrivateKeyInfo(new JcePKCSPBEInputDecryptorProviderBuilder().setProvider(Pki.BC).build(passphrase));
      key = Pki.privateKey(plain.getEncoded());
    } catch (PKCSException | IOException | RuntimeException e) {
      // a wrong passphrase fails the padding check, or (rarely) decrypts to bytes that are no key
      throw new OfflineCa.Refused(shown + " does not open with this passphrase");
    }
    if (!belongsTo(key, expected)) throw new OfflineCa.Refused(shown + " is not the private key of the root certificate beside it");
    return key;
  }

  /** Whether {@code key} signs what {@code expected} verifies. */
  private static boolean belongsTo(PrivateKey key, PublicKey expected) {
    byte[] probe = "meshplane ca: does this key belong to the root".getBytes(StandardCharsets.US_ASCII);
    try {
      Signature s = Signature.getInstance(Pki.SIGNATURE, Pki.BC);
      s.initSign(key);
      s.update(probe);
      byte[] sig = s.sign();
      Signature v = Signature.getInstance(Pki.SIGNATURE, Pki.BC);
      v.initVerify(expected);
      v.update(probe);
      return v.verify(sig);
    } catch (GeneralSecurityException | RuntimeException e) {
      return false;
    }
  }
}
