package io.meshplane.ingress;

/**
 * The hostname and path prefix of an ingress route (API.md §19), checked before anything else: each
 * method returns null when the value is acceptable, else the reason, which the caller reports under
 * the field's name (a 400 naming {@code hostname} or {@code path_prefix}).
 *
 * <p>Hostnames: LDH ASCII in lower case only. An internationalised name is given as its punycode
 * A-labels ({@code xn--…}); a Unicode U-label, upper case, a trailing dot, an empty label, a label of
 * more than 63 characters or starting or ending with '-', a name of more than 253 characters, and a
 * wildcard anywhere but as the whole leftmost label ({@code *.example.com}) are refused. A name of one
 * label ({@code localhost}) or an all-digit top label (an IPv4 literal) is refused too: a route is for a
 * DNS name. Path prefixes: start with '/', at most 256 characters, printable ASCII without space,
 * no '%' escape of '.', '/' or '\' (nor of '%' itself), no '\', no '?' or '#', no empty segment
 * ('//'), no '.' or '..' segment.
 */
final class IngressNames {
  static final int HOSTNAME_MAX = 253;
  static final int LABEL_MAX = 63;
  static final int PATH_MAX = 256;

  private IngressNames() {}

  /** Null when {@code h} is an acceptable route hostname, else why not. */
  static String hostname(String h) {
    if (h.isEmpty()) return "must not be empty";
    if (h.length() > HOSTNAME_MAX) return "must be at most " + HOSTNAME_MAX + " characters";
    for (int i = 0; i < h.length(); i++) {
      char c = h.charAt(i);
      if (c > 0x7e || c < 0x20) return "must be ASCII: give an internationalised name as punycode A-labels (xn--…)";
      if (c >= 'A' && c <= 'Z') return "must be lower case";
    }
    if (h.endsWith(".")) return "must not end with '.' (no trailing dot)";
    String[] labels = h.split("\\.", -1);
    if (labels.length < 2) return "must have at least two labels (a DNS name such as app.example.com)";
    for (int i = 0; i < labels.length; i++) {
      String l = labels[i];
      if (l.isEmpty()) return "must not have an empty label ('..' or a leading '.')";
      if (l.equals("*")) {
        if (i != 0) return "may have '*' only as the whole leftmost label (*.example.com)";
        if (labels.length < 3) return "a wildcard must stand above a name of at least two labels (*.example.com)";
        continue;
      }
      if (l.length() > LABEL_MAX) return "must not have a label of more than " + LABEL_MAX + " characters";
      for (int j = 0; j < l.length(); j++) {
        char c = l.charAt(j);
        if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')) {
          return c == '*' ? "may have '*' only as the whole leftmost label (*.example.com)"
              : "must be letters a-z, digits and '-' in dot-separated labels (found '" + printable(c) + "')";
        }
      }
      if (l.startsWith("-") || l.endsWith("-")) return "must not have a label that starts or ends with '-'";
    }
    String top = labels[labels.length - 1];
    if (top.chars().allMatch(c -> c >= '0' && c <= '9')) return "must be a DNS name, not an address";
    return null;
  }

  /** Null when {@code p} is an acceptable path prefix, else why not. */
  static String pathPrefix(String p) {
    if (p.isEmpty() || p.charAt(0) != '/') return "must start with '/'";
    if (p.length() > PATH_MAX) return "must be at most " + PATH_MAX + " characters";
    for (int i = 0; i < p.length(); i++) {
      char c = p.charAt(i);
      if (c < 0x21 || c > 0x7e) return "must be printable ASCII without spaces or control characters (percent-encode the rest)";
      if (c == '\\') return "must not contain '\\'";
      if (c == '?' || c == '#') return "must be a path only, without '?' or '#'";
      if (c == '%') {
        if (i + 2 >= p.length() || hex(p.charAt(i + 1)) < 0 || hex(p.charAt(i + 2)) < 0) return "has a '%' that is not followed by two hex digits";
        int b = hex(p.charAt(i + 1)) * 16 + hex(p.charAt(i + 2));
        if (b == '.' || b == '/' || b == '\\' || b == '%' || b < 0x20 || b == 0x7f) {
          return "must not percent-encode '.', '/', '\\', '%' or a control character (%" + p.substring(i + 1, i + 3) + ")";
        }
      }
    }
    String[] segments = p.substring(1).split("/", -1);
    for (int i = 0; i < segments.length; i++) {
      String s = segments[i];
      if (s.equals(".") || s.equals("..")) return "must not have a '.' or '..' segment";
      // the last segment may be empty: "/" and "/api/" end with '/'
      if (s.isEmpty() && i < segments.length - 1) return "must not have an empty segment ('//')";
    }
    return null;
  }

  private static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  private static String printable(char c) {
    return c >= 0x21 && c <= 0x7e ? String.valueOf(c) : String.format("U+%04X", (int) c);
  }
}
