package io.meshplane.agent;

/** Writes JSON text by hand into a reused {@link StringBuilder}: the heartbeat body of every simulated node is built this way. */
final class JsonText {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private JsonText() {}

  /** Appends {@code s} as a JSON string, quotes included. */
  static StringBuilder string(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) sb.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xf]);
          else sb.append(c);
        }
      }
    }
    return sb.append('"');
  }

  /** Appends {@code "key":} (the key is a constant of ours: no escaping). */
  static StringBuilder key(StringBuilder sb, String key) {
    return sb.append('"').append(key).append("\":");
  }
}
