package io.meshplane.waf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader (RFC 8259) with hard bounds on depth and on the number of values, for two
 * inputs: a request body's prefix ({@code request.body_json}) and a WAF policy document. Objects
 * become {@code LinkedHashMap<String, Object>}, arrays {@code ArrayList}, numbers {@code Long} (when
 * integral and in range) or {@code Double}, {@code null} the given {@code nullValue}. Anything else
 * (a duplicate key included) fails with an {@link IllegalArgumentException} saying where.
 */
final class BoundedJson {
  private final String s;
  private final int maxDepth;
  private final int maxValues;
  private final Object nullValue;
  private int pos;
  private int values;

  private BoundedJson(String s, int maxDepth, int maxValues, Object nullValue) {
    this.s = s;
    this.maxDepth = maxDepth;
    this.maxValues = maxValues;
    this.nullValue = nullValue;
  }

  static Object parse(String text, int maxDepth, int maxValues, Object nullValue) {
    BoundedJson p = new BoundedJson(text, maxDepth, maxValues, nullValue);
    p.ws();
    Object v = p.value(0);
    p.ws();
    if (p.pos != text.length()) throw p.fail("unexpected text after the value");
    return v;
  }

  private IllegalArgumentException fail(String why) {
    return new IllegalArgumentException("invalid JSON at offset " + pos + ": " + why);
  }

  private void ws() {
    while (pos < s.length()) {
      char c = s.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      pos++;
    }
  }

  private Object value(int depth) {
    if (++values > maxValues) throw fail("more than " + maxValues + " values");
    if (pos >= s.length()) throw fail("unexpected end");
    char c = s.charAt(pos);
    switch (c) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return string();
      case 't':
        return word("true", Boolean.TRUE);
      case 'f':
        return word("false", Boolean.FALSE);
      case 'n':
        return word("null", nullValue);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        throw fail("unexpected character");
    }
  }

  private Object word(String w, Object v) {
    if (!s.startsWith(w, pos)) throw fail("unexpected word");
    pos += w.length();
    return v;
  }

  private Map<String, Object> object(int depth) {
    if (depth > maxDepth) throw fail("nested deeper than " + maxDepth);
    pos++;
    Map<String, Object> m = new LinkedHashMap<>();
    ws();
    if (pos < s.length() && s.charAt(pos) == '}') {
      pos++;
      return m;
    }
    while (true) {
      ws();
      if (pos >= s.length() || s.charAt(pos) != '"') throw fail("expected a key");
      String k = string();
      ws();
      if (pos >= s.length() || s.charAt(pos) != ':') throw fail("expected ':'");
      pos++;
      ws();
      if (m.put(k, value(depth)) != null || m.size() > maxValues) throw fail("duplicate key \"" + k + "\"");
      ws();
      if (pos >= s.length()) throw fail("unexpected end");
      char c = s.charAt(pos++);
      if (c == '}') return m;
      if (c != ',') throw fail("expected ',' or '}'");
    }
  }

  private List<Object> array(int depth) {
    if (depth > maxDepth) throw fail("nested deeper than " + maxDepth);
    pos++;
    List<Object> l = new ArrayList<>();
    ws();
    if (pos < s.length() && s.charAt(pos) == ']') {
      pos++;
      return l;
    }
    while (true) {
      ws();
      l.add(value(depth));
      ws();
      if (pos >= s.length()) throw fail("unexpected end");
      char c = s.charAt(pos++);
      if (c == ']') return l;
      if (c != ',') throw fail("expected ',' or ']'");
    }
  }

  private String string() {
    pos++;
    StringBuilder b = null;
    int start = pos;
    while (pos < s.length()) {
      char c = s.charAt(pos);
      if (c == '"') {
        String out = b == null ? s.substring(start, pos) : b.append(s, start, pos).toString();
        pos++;
        return out;
      }
      if (c < 0x20) throw fail("control character in a string");
      if (c == '\\') {
        if (b == null) b = new StringBuilder();
        b.append(s, start, pos);
        if (pos + 1 >= s.length()) throw fail("unexpected end");
        char e = s.charAt(pos + 1);
        pos += 2;
        switch (e) {
          case '"', '\\', '/' -> b.append(e);
          case 'b' -> b.append('\b');
          case 'f' -> b.append('\f');
          case 'n' -> b.append('\n');
          case 'r' -> b.append('\r');
          case 't' -> b.append('\t');
          case 'u' -> {
            if (pos + 4 > s.length()) throw fail("short \\u escape");
            int v = 0;
            for (int i = 0; i < 4; i++) {
              int d = Character.digit(s.charAt(pos + i), 16);
              if (d < 0) throw fail("bad \\u escape");
              v = v * 16 + d;
            }
            b.append((char) v);
            pos += 4;
          }
          default -> throw fail("bad escape");
        }
        start = pos;
        continue;
      }
      pos++;
    }
    throw fail("unterminated string");
  }

  private Object number() {
    int start = pos;
    if (s.charAt(pos) == '-') pos++;
    int digits = pos;
    while (pos < s.length() && Character.isDigit(s.charAt(pos))) pos++;
    if (pos == digits || (s.charAt(digits) == '0' && pos - digits > 1)) throw fail("bad number");
    boolean integral = true;
    if (pos < s.length() && s.charAt(pos) == '.') {
      integral = false;
      pos++;
      int f = pos;
      while (pos < s.length() && Character.isDigit(s.charAt(pos))) pos++;
      if (pos == f) throw fail("bad number");
    }
    if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
      integral = false;
      pos++;
      if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) pos++;
      int e = pos;
      while (pos < s.length() && Character.isDigit(s.charAt(pos))) pos++;
      if (pos == e) throw fail("bad number");
    }
    String t = s.substring(start, pos);
    if (integral && t.length() <= 18) return Long.parseLong(t);
    double d = Double.parseDouble(t);
    if (Double.isInfinite(d)) throw fail("number out of range");
    return d;
  }
}
