package io.meshplane.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/** Bytes on a socket, for what an HTTP client library refuses to send: broken framing, oversized lines. */
public final class RawHttp {
  private RawHttp() {}

  /** A parsed answer: status, headers as sent, and the body. */
  public record Answer(int status, String head, String body) {
    public String header(String name) {
      for (String line : head.split("\r\n")) {
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) return line.substring(colon + 1).trim();
      }
      return null;
    }
  }

  /** Sends {@code request} and reads until the server closes the connection or 5 s pass; null when nothing came back. */
  public static Answer exchange(int port, byte[] request) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
      s.setSoTimeout(5000);
      s.getOutputStream().write(request);
      s.getOutputStream().flush();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[8192];
      try {
        for (int n; (n = in.read(buf)) > 0; ) {
          out.write(buf, 0, n);
          if (complete(out.toString(StandardCharsets.ISO_8859_1))) break;
        }
      } catch (SocketTimeoutException | java.net.SocketException e) {
        // the server closed or stayed silent: whatever arrived is the answer
      }
      String text = out.toString(StandardCharsets.UTF_8);
      int end = text.indexOf("\r\n\r\n");
      if (end < 0) return null;
      String head = text.substring(0, end);
      String[] statusLine = head.split("\r\n", 2)[0].split(" ");
      return new Answer(Integer.parseInt(statusLine[1]), head, text.substring(end + 4));
    }
  }

  /** Whether the head and a body of its content-length have arrived. */
  private static boolean complete(String text) {
    int end = text.indexOf("\r\n\r\n");
    if (end < 0) return false;
    for (String line : text.substring(0, end).split("\r\n")) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        int len = Integer.parseInt(line.substring(15).trim());
        return text.length() - end - 4 >= len;
      }
    }
    return false;
  }

  public static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }
}
