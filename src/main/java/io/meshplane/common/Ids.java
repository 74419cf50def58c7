package io.meshplane.common;

import java.security.SecureRandom;

/**
 * Opaque, prefixed ids ({@code tok_}, {@code nd_}, {@code ev_}, ...). The body is 48 bits of
 * milliseconds then 80 random bits in Crockford base32 (ULID layout): ids sort by creation time,
 * which keeps keyset pages and B-tree inserts orderly, and cannot be guessed.
 */
public final class Ids {
  private static final char[] ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz".toCharArray();
  private static final SecureRandom RANDOM = new SecureRandom();

  private Ids() {}

  public static String next(String prefix) {
    byte[] rnd = new byte[10];
    RANDOM.nextBytes(rnd);
    long time = System.currentTimeMillis();
    char[] out = new char[26];
    for (int i = 9; i >= 0; i--) {
      out[i] = ALPHABET[(int) (time & 31)];
      time >>>= 5;
    }
    // 80 random bits -> 16 chars
    long hi = ((rnd[0] & 0xffL) << 32) | ((rnd[1] & 0xffL) << 24) | ((rnd[2] & 0xffL) << 16) | ((rnd[3] & 0xffL) << 8) | (rnd[4] & 0xffL);
    long lo = ((rnd[5] & 0xffL) << 32) | ((rnd[6] & 0xffL) << 24) | ((rnd[7] & 0xffL) << 16) | ((rnd[8] & 0xffL) << 8) | (rnd[9] & 0xffL);
    for (int i = 17; i >= 10; i--) {
      out[i] = ALPHABET[(int) (hi & 31)];
      hi >>>= 5;
    }
    for (int i = 25; i >= 18; i--) {
      out[i] = ALPHABET[(int) (lo & 31)];
      lo >>>= 5;
    }
    return prefix + "_" + new String(out);
  }

  /** True when {@code id} has the shape of an id of any type: a 2-4 letter prefix, '_', 26 base32 characters. */
  public static boolean wellFormed(String id) {
    if (id == null) return false;
    int underscore = id.indexOf('_');
    if (underscore < 2 || underscore > 4) return false;
    for (int i = 0; i < underscore; i++) {
      if (id.charAt(i) < 'a' || id.charAt(i) > 'z') return false;
    }
    return looksLike(id.substring(0, underscore), id);
  }

  /** True when {@code id} has the shape of an id with this prefix (checked before any lookup). */
  public static boolean looksLike(String prefix, String id) {
    if (id == null || id.length() != prefix.length() + 27 || !id.startsWith(prefix + "_")) return false;
    for (int i = prefix.length() + 1; i < id.length(); i++) {
      char c = id.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) return false;
    }
    return true;
  }
}
