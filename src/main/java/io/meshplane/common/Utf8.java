package io.meshplane.common;

/**
 * Strict UTF-8 (RFC 3629, Unicode's "well-formed" table): the shortest form of each scalar value only.
 * Java's decoders are lenient in ways that matter here (Jackson reads overlong forms and encoded
 * surrogates; {@code new String(bytes, UTF_8)} replaces them with U+FFFD), so request bytes are checked
 * by hand before anything decodes them.
 */
public final class Utf8 {
  private Utf8() {}

  /**
   * The index of the first byte that is not part of well-formed UTF-8, or -1. Refused: NUL, a byte
   * order mark at the start, stray continuation bytes, C0/C1 and other overlong leads, encoded
   * surrogates (ED A0..BF), values above U+10FFFF, truncated sequences.
   */
  public static int firstInvalid(byte[] b, int from, int to) {
    if (to - from >= 3 && (b[from] & 0xff) == 0xEF && (b[from + 1] & 0xff) == 0xBB && (b[from + 2] & 0xff) == 0xBF) return from;
    int i = from;
    while (i < to) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        if (c == 0) return i;
        i++;
        continue;
      }
      int need;
      int lo = 0x80;
      int hi = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
      } else if (c == 0xE0) {
        need = 2;
        lo = 0xA0;
      } else if (c == 0xED) {
        need = 2;
        hi = 0x9F;
      } else if (c >= 0xE1 && c <= 0xEF) {
        need = 2;
      } else if (c == 0xF0) {
        need = 3;
        lo = 0x90;
      } else if (c == 0xF4) {
        need = 3;
        hi = 0x8F;
      } else if (c >= 0xF1 && c <= 0xF3) {
        need = 3;
      } else {
        return i;
      }
      if (i + need >= to) return i; // truncated: fewer bytes left than the sequence needs
      int second = b[i + 1] & 0xff;
      if (second < lo || second > hi) return i;
      for (int k = 2; k <= need; k++) {
        int cont = b[i + k] & 0xff;
        if (cont < 0x80 || cont > 0xBF) return i;
      }
      i += need + 1;
    }
    return -1;
  }
}
