package io.meshplane.agent;

import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.spec.NamedParameterSpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.SplittableRandom;

/**
 * A node's key: the public key as the coordinator sees it (base64 of the raw 32 bytes) and, for the
 * reference agent, the private key (PKCS#8 encoding, kept only in the state dir). Simulated nodes hold
 * no private key: they never do any cryptography.
 */
record NodeKey(String publicKey, byte[] privateKey) {
  /** Bytes of an X.509 (SubjectPublicKeyInfo) encoding of an X25519 key: 12 of header, then the raw 32. */
  private static final int X509_X25519_LENGTH = 44;

  /** Where new keys come from: enrollment, and every {@code rekey} command. */
  interface Source {
    NodeKey generate();
  }

  /** A real X25519 key pair from the JDK ({@code XDH}, {@code X25519}); about 0.2 ms of CPU each here. */
  static Source x25519() {
    return () -> {
      try {
        KeyPairGenerator g = KeyPairGenerator.getInstance("XDH");
        g.initialize(NamedParameterSpec.X25519);
        KeyPair kp = g.generateKeyPair();
        return new NodeKey(rawPublic(kp.getPublic().getEncoded()), kp.getPrivate().getEncoded());
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("this JDK cannot generate X25519 keys: " + e.getMessage(), e);
      }
    };
  }

  /**
   * 32 random bytes as the public key, no private key: what simulated nodes use. Any 32-byte string is
   * a valid X25519 public value, and a simulator never completes a key exchange, so a real key pair
   * (0.2 ms of CPU each, 20 s for 100,000 nodes) would buy nothing. Not thread-safe: one per event loop.
   */
  static Source randomPublic(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    byte[] raw = new byte[32];
    return () -> {
      for (int i = 0; i < 32; i += 8) {
        long v = random.nextLong();
        for (int j = 0; j < 8; j++) raw[i + j] = (byte) (v >>> (8 * j));
      }
      return new NodeKey(Base64.getEncoder().encodeToString(raw), null);
    };
  }

  /** The base64 of the raw 32-byte public key: the last 32 bytes of its X.509 encoding. */
  static String rawPublic(byte[] x509) {
    if (x509.length != X509_X25519_LENGTH) throw new IllegalStateException("not an X25519 public key encoding (" + x509.length + " bytes)");
    return Base64.getEncoder().encodeToString(Arrays.copyOfRange(x509, x509.length - 32, x509.length));
  }

  /** True when {@code s} is the base64 of exactly 32 bytes (what the coordinator accepts as a public key). */
  static boolean wellFormedPublic(String s) {
    if (s == null || s.length() != 44) return false;
    try {
      return Base64.getDecoder().decode(s).length == 32;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
