package io.meshplane.http;

import static io.meshplane.http.HostileInput.*;
import static io.meshplane.http.HostileReplica.*;
import static io.meshplane.http.HostileRequests.*;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** {@link HostileInputTest}'s cases that break a body: its syntax, encoding, types, nesting, size or media type. */
final class HostileBodies {
  private HostileBodies() {}

  /** Route {@code route}'s valid body broken by {@code b} at {@code field} (where the breakage has a place); {@code n} picks the variant. */
  static Case body(Breakage b, BodyRoute route, Field field, int n, String junk) {
    Set<Integer> bad = Set.of(400);
    String what = what(route.method(), route.target());
    switch (b) {
      case TRUNCATED -> {
        String text = route.body().encode();
        int cut = 1 + n % (text.length() - 1);
        String head = text.substring(0, cut);
        return body(b, what + " cut at " + cut, route, head, bad, fieldAtEnd(head), true);
      }
      case WRONG_TYPE -> {
        Object value = wrongValue(field.kind(), n, junk);
        return body(b, what + " " + field.path() + "=" + value, route, put(route.body(), field.path(), value).encode(), bad, field.name(),
            false);
      }
      case NULL_REQUIRED -> {
        return body(b, what + " " + field.path() + "=null", route, put(route.body(), field.path(), null).encode(), bad, field.name(), false);
      }
      case NUL_CHARACTER -> {
        String v = junk.substring(0, junk.length() / 2) + "\u0000" + junk.substring(junk.length() / 2);
        return body(b, what + " NUL in " + field.path(), route, put(route.body(), field.path(), v).encode(), bad, field.path(), true);
      }
      case CONTROL_CHARACTER -> {
        // one control character (C0, DEL or C1), in the middle of the field's valid value (so that nothing else is wrong with it) or alone
        char control = n % 34 < 31 ? (char) (1 + n % 34) : new char[] {'\u007f', '\u0085', '\u009b'}[n % 34 - 31];
        String v = (n / 34) % 2 == 0 && get(route.body(), field.path()) instanceof String valid && valid.length() > 1
            ? valid.substring(0, valid.length() / 2) + control + valid.substring(valid.length() / 2) : "x" + control + "y";
        return body(b, what + " " + String.format("U+%04X", (int) control) + " in " + field.path() + " (" + v.length() + " chars)", route,
            put(route.body(), field.path(), v).encode(), bad, field.name(), false);
      }
      case LONE_SURROGATE -> {
        String escape = n % 2 == 0 ? "\\ud83d" : "\\udc00";
        return body(b, what + " lone surrogate in " + field.path(), route, raw(route.body(), field.path(), "\"a" + escape + "b\""), bad,
            field.path(), true);
      }
      case BAD_UTF8 -> {
        byte[][] sequences = {{(byte) 0xC0, (byte) 0xAF}, {(byte) 0xE0, (byte) 0x80, (byte) 0xAF}, {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0xFF}, {(byte) 0xC3}};
        byte[] seq = sequences[n % sequences.length];
        String text = raw(route.body(), field.path(), "\"__BYTES__\"");
        int at = text.indexOf("__BYTES__");
        byte[] head = text.substring(0, at).getBytes(StandardCharsets.UTF_8);
        byte[] tail = text.substring(at + 9).getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[head.length + seq.length + tail.length];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(seq, 0, out, head.length, seq.length);
        System.arraycopy(tail, 0, out, head.length + seq.length, tail.length);
        return new Case(b, what + " malformed UTF-8 in " + field.path(), route.method(), route.door().port(), route.target(),
            "application/json", out, route.door().headers(), bad, StrictJson.BODY, true, null);
      }
      case DEEP_NESTING -> {
        return deep(route, field, 33 + n % 10_000, n % 2 == 0);
      }
      case HUGE_ARRAY -> {
        String huge = "[" + "1,".repeat(100_000 + n % 1000) + "1]";
        return body(b, what + " 100,000-element array at " + field.path(), route, raw(route.body(), field.path(), huge), Set.of(413), null,
            true);
      }
      case LONG_ARRAY -> {
        String items = "[" + "\"x\",".repeat(1000 + n % 9000) + "\"x\"]";
        return body(b, what + " long array at " + field.path(), route, raw(route.body(), field.path(), items), bad, field.name(), false);
      }
      case INFINITE_NUMBER -> {
        String[] numbers = {"1e999", "-1e999", "1E400", "9.9e9999"};
        String path = route.template().endsWith("/heartbeat") && n % 2 == 0 ? "telemetry.big" : field.path();
        return body(b, what + " " + numbers[n % 4] + " at " + path, route, raw(route.body(), path, numbers[n % 4]), bad, path, true);
      }
      case COMMENT -> {
        String text = route.body().encode();
        String comment = n % 2 == 0 ? "/* " + junk.replace("*/", "").replace("\u0000", "") + " */" : "// x\n"; // a NUL byte is refused first
        int at = text.indexOf(',') + 1;
        // the parser names where it stood when the comment began: the member or element before it
        return body(b, what + " with a comment", route, text.substring(0, at) + comment + text.substring(at), bad,
            fieldAtEnd(text.substring(0, at)), true);
      }
      case DUPLICATE_KEY -> {
        String top = field.path().split("[.\\[]")[0];
        String text = route.body().encode();
        String dup = "{\"" + top + "\":" + new JsonObject().put("v", route.body().getValue(top)).encode().substring(5);
        text = dup.substring(0, dup.length() - 1) + "," + text.substring(1);
        return body(b, what + " " + top + " twice", route, text, bad, top, true);
      }
      case TRAILING_GARBAGE -> {
        String[] tails = {"{}", "x", "[]", "\"", "0", "}"};
        return body(b, what + " with something after it", route, route.body().encode() + " " + tails[n % tails.length], bad,
            StrictJson.BODY, true);
      }
      case UTF16_BOM -> {
        boolean bom8 = n % 3 == 0;
        byte[] text = route.body().encode().getBytes(bom8 ? StandardCharsets.UTF_8 : n % 3 == 1 ? StandardCharsets.UTF_16LE : StandardCharsets.UTF_16BE);
        byte[] bom = bom8 ? new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF} : n % 3 == 1 ? new byte[] {(byte) 0xFF, (byte) 0xFE}
            : new byte[] {(byte) 0xFE, (byte) 0xFF};
        byte[] out = new byte[bom.length + text.length];
        System.arraycopy(bom, 0, out, 0, bom.length);
        System.arraycopy(text, 0, out, bom.length, text.length);
        return new Case(b, what + " with a byte order mark", route.method(), route.door().port(), route.target(), "application/json", out,
            route.door().headers(), bad, StrictJson.BODY, true, null);
      }
      case WRONG_MEDIA_TYPE -> {
        String[] types = {"multipart/form-data; boundary=XX", "application/x-www-form-urlencoded", "text/plain", "text/json",
            "application/json; charset=utf-16", "application/json; charset=iso-8859-1", "application/merge-patch+json",
            "application/xml", "application/json; boundary=1", "*/*", "", "application/jsonx", "application/json, text/plain"};
        String type = types[n % types.length];
        byte[] body = type.startsWith("multipart") ? ("--XX\r\nContent-Disposition: form-data; name=\"endpoints\"\r\n\r\n1.2.3.4:5\r\n--XX--\r\n")
            .getBytes(StandardCharsets.UTF_8) : route.body().encode().getBytes(StandardCharsets.UTF_8);
        return new Case(b, what + " as '" + type + "'", route.method(), route.door().port(), route.target(), type, body,
            route.door().headers(), Set.of(415), null, true, null);
      }
      case BAD_PATH_ESCAPE -> {
        String[] escapes = {"%zz", "%z", "%0g", "%00", "%C0%AF", "%ED%A0%80", "%FF", "%0A", "%7F", "%g1"};
        String path = route.path();
        int at = 1 + n % (path.length() - 1);
        String target = path.substring(0, at) + escapes[n % escapes.length] + path.substring(at)
            + (route.query().isEmpty() ? "" : "?" + route.query());
        return new Case(b, "path " + what(route.method(), target), route.method(), route.door().port(), target, "application/json",
            route.body().encode().getBytes(StandardCharsets.UTF_8), route.door().headers(), bad, RequestTarget.PATH, true, null);
      }
      case BAD_CHUNKING -> {
        String[] sizes = {"zz", "-1", "0x10", "+1", "ffffffffffffffffff", "g"};
        String size = sizes[n % sizes.length];
        StringBuilder head = new StringBuilder(route.method() + " " + route.target() + " HTTP/1.1\r\nHost: x\r\n");
        route.door().headers().forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
        return rawCase(b, what + " with chunk size '" + size + "'", route.door().port(), head + "Content-Type: application/json\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n{}\r\n0\r\n\r\n", Set.of(400));
      }
      default -> throw new IllegalStateException(b.toString());
    }
  }

  /**
   * {@code depth} levels of arrays ({@code [[[1]]]}) or objects ({@code {"a":{"a":1}}}) in place of
   * {@code field}: refused where the nesting passes {@value HostileInput#MAX_DEPTH} levels, the problem naming
   * that place (the field, then one index or key for each level of the nesting inside it), or 413 when
   * the body is over the limit.
   */
  static Case deep(BodyRoute route, Field field, int depth, boolean arrays) {
    String deep = (arrays ? "[" : "{\"a\":").repeat(depth) + "1" + (arrays ? "]" : "}").repeat(depth);
    String text = raw(route.body(), field.path(), deep);
    // the levels around the field's value: the body, and one for each key or index in the field's path
    int around = field.path().split("[.\\[]").length;
    String named = field.path() + (arrays ? "[0]" : ".a").repeat(MAX_DEPTH - around);
    boolean tooLarge = text.getBytes(StandardCharsets.UTF_8).length > Routers.BODY_LIMIT;
    return body(Breakage.DEEP_NESTING, what(route.method(), route.target()) + " " + depth + " levels of " + (arrays ? "arrays" : "objects")
        + " at " + field.path(), route, text, Set.of(tooLarge ? 413 : 400), tooLarge ? null : named, true);
  }

  /**
   * The field the JSON parser names when the text stops (or stops making sense) right after
   * {@code head}: where it stands in the innermost open object or array. In an object that is the last
   * key read whole (none before the first: then the object's own place); in an array, the element
   * counted by the commas read. {@code (body)} when it stands at no field. (Written from the text, not
   * from the parser, so that the parser's answer is checked.)
   */
  static String fieldAtEnd(String head) {
    List<Object[]> open = new ArrayList<>(); // {'{', key} or {'[', index}
    boolean inString = false;
    boolean escaped = false;
    boolean key = false;
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < head.length(); i++) {
      char c = head.charAt(i);
      if (inString) {
        if (escaped) {
          escaped = false;
          text.append(c);
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          inString = false;
          if (key) open.get(open.size() - 1)[1] = text.toString();
        } else {
          text.append(c);
        }
        continue;
      }
      Object[] top = open.isEmpty() ? null : open.get(open.size() - 1);
      switch (c) {
        case '"' -> {
          inString = true;
          text.setLength(0);
          key = top != null && (char) top[0] == '{' && top[2] == Boolean.TRUE;
        }
        case '{' -> open.add(new Object[] {'{', null, Boolean.TRUE});
        case '[' -> open.add(new Object[] {'[', 0, Boolean.FALSE});
        case '}', ']' -> open.remove(open.size() - 1);
        case ',' -> {
          if ((char) top[0] == '[') top[1] = (Integer) top[1] + 1;
          else top[2] = Boolean.TRUE;
        }
        case ':' -> top[2] = Boolean.FALSE;
        default -> { }
      }
    }
    StringBuilder path = new StringBuilder();
    for (Object[] o : open) {
      if ((char) o[0] == '[') path.append('[').append(o[1]).append(']');
      else if (o[1] != null) path.append('.').append(o[1]);
    }
    return path.isEmpty() ? StrictJson.BODY : path.charAt(0) == '.' ? path.substring(1) : path.toString();
  }

  static Object wrongValue(Kind kind, int n, String junk) {
    Object[] all = {junk, 42, 3.5, true, false, new JsonArray().add(junk), new JsonObject().put("k", junk), -7};
    for (int i = 0; i < all.length; i++) {
      Object v = all[(n + i) % all.length];
      boolean fits = switch (kind) {
        case STRING -> v instanceof String;
        case NUMBER -> v instanceof Integer i2 && i2 >= 0;
        case BOOLEAN -> v instanceof Boolean;
        case OBJECT -> v instanceof JsonObject;
        case ARRAY -> v instanceof JsonArray;
      };
      if (!fits) return v;
    }
    throw new IllegalStateException();
  }

  static Case body(Breakage b, String what, BodyRoute route, String text, Set<Integer> statuses, String field, boolean exact) {
    return new Case(b, what, route.method(), route.door().port(), route.target(), "application/json", text.getBytes(StandardCharsets.UTF_8),
        route.door().headers(), statuses, field, exact, null);
  }

  /** The body's text with the value at {@code path} replaced by raw JSON text (which need not be valid). */
  static String raw(JsonObject body, String path, String rawValue) {
    String marker = "__HOSTILE_VALUE__";
    return put(body, path, marker).encode().replace("\"" + marker + "\"", rawValue);
  }

  /** The value at {@code path} ({@code a.b}, {@code a[0].b}) in {@code body}. */
  static Object get(JsonObject body, String path) {
    Object at = body;
    for (String part : path.split("\\.")) {
      int bracket = part.indexOf('[');
      at = ((JsonObject) at).getValue(bracket < 0 ? part : part.substring(0, bracket));
      if (bracket >= 0) at = ((JsonArray) at).getValue(Integer.parseInt(part.substring(bracket + 1, part.indexOf(']'))));
    }
    return at;
  }

  /** A copy of {@code body} with the value at {@code path} ({@code a.b}, {@code a[0].b}) set. */
  static JsonObject put(JsonObject body, String path, Object value) {
    JsonObject copy = body.copy();
    Object container = copy;
    String[] parts = path.split("\\.");
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i];
      int bracket = part.indexOf('[');
      String key = bracket < 0 ? part : part.substring(0, bracket);
      boolean last = i == parts.length - 1;
      JsonObject obj = (JsonObject) container;
      if (bracket < 0) {
        if (last) {
          obj.put(key, value);
        } else {
          if (!(obj.getValue(key) instanceof JsonObject)) obj.put(key, new JsonObject());
          container = obj.getJsonObject(key);
        }
      } else {
        int index = Integer.parseInt(part.substring(bracket + 1, part.indexOf(']')));
        JsonArray arr = obj.getJsonArray(key);
        if (last) {
          arr.set(index, value);
        } else {
          container = arr.getJsonObject(index);
        }
      }
    }
    return copy;
  }
}
