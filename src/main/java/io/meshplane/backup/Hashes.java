package io.meshplane.backup;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 in lower-case hex, as manifest.txt writes it. */
final class Hashes {
  private Hashes() {}

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha256(byte[] bytes) {
    return HexFormat.of().formatHex(sha256().digest(bytes));
  }

  /** Copies {@code in} to {@code out} and returns the SHA-256 of what was copied. */
  static String copy(InputStream in, OutputStream out) throws IOException {
    MessageDigest d = sha256();
    byte[] buf = new byte[1 << 16];
    for (int n; (n = in.read(buf)) > 0; ) {
      d.update(buf, 0, n);
      out.write(buf, 0, n);
    }
    return HexFormat.of().formatHex(d.digest());
  }
}
