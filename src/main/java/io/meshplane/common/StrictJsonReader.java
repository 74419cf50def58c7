package io.meshplane.common;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads JSON text strictly (RFC 8259), so that what is stored is exactly what was sent and nothing
 * PostgreSQL cannot hold gets in: request bodies ({@code http.StrictJson}) and stored telemetry
 * ({@code node.Telemetry}). Vert.x's own parser accepts comments, guesses UTF-16/32 from the first
 * bytes, passes overlong UTF-8 and lone surrogates (which turn into {@code ?} on the way to the
 * database), keeps the last of two equal keys, and reads {@code 1e999} as infinity; this one refuses
 * each of them with a {@link Refusal} (400) naming the field:
 *
 * <ul>
 *   <li>the bytes must be well-formed UTF-8 ({@link Utf8}): no byte order mark, no overlong forms, no
 *       encoded surrogates, nothing above U+10FFFF, no NUL byte;
 *   <li>no comments, single quotes, unquoted names, NaN, leading zeros or trailing commas (Jackson's
 *       defaults), one value only (nothing after it);
 *   <li>no NUL character ({@code \u0000}) in any string or key, no unpaired surrogate escape;
 *   <li>no key given twice in one object;
 *   <li>numbers finite ({@code 1e999} is refused rather than read as infinity);
 *   <li>at most {@link #MAX_DEPTH} levels of nesting.
 * </ul>
 *
 * The parser keeps no state between calls and costs about what Vert.x's does: one pass over the bytes to
 * check the encoding, one Jackson token stream, the same maps and lists. Pure: no HTTP.
 */
public final class StrictJsonReader {
  /** Deepest nesting a text may have (the deepest legitimate body, a heartbeat's telemetry, has 9). */
  public static final int MAX_DEPTH = 32;
  /** The field name used when a problem concerns the text (a request's body) as a whole rather than one field in it. */
  public static final String BODY = "(body)";
  private static final Pattern PLAIN_KEY = Pattern.compile("^[A-Za-z0-9_\\-]{1,64}$");
  private static final JsonFactory FACTORY = JsonFactory.builder()
      // hostile keys must not grow the JVM's string table
      .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH + 1).maxNumberLength(400).build())
      .build();

  private StrictJsonReader() {}

  /** Parses a text that must be one JSON object. Throws {@link Refusal} (400) naming the field at fault. */
  public static JsonObject parseObject(byte[] bytes) {
    Object v = parse(bytes);
    if (!(v instanceof JsonObject o)) throw Refusal.invalid(BODY, "must be a JSON object");
    return o;
  }

  /** Parses any JSON value (object, array, string, number, boolean or null). Throws {@link Refusal} (400). */
  public static Object parse(byte[] bytes) {
    int bad = Utf8.firstInvalid(bytes, 0, bytes.length);
    if (bad >= 0) {
      String why = bytes[bad] == 0 ? "must not contain a NUL byte"
          : bad == 0 && bytes.length >= 3 && (bytes[0] & 0xff) == 0xEF && (bytes[1] & 0xff) == 0xBB && (bytes[2] & 0xff) == 0xBF
              ? "must not start with a byte order mark"
              : "must be UTF-8 (malformed, overlong or surrogate sequence at byte " + bad + ")";
      throw Refusal.invalid(BODY, why);
    }
    try (JsonParser p = FACTORY.createParser(bytes)) {
      JsonToken first = p.nextToken();
      if (first == null) throw Refusal.invalid(BODY, "is empty");
      Object value = value(p, first, 1);
      if (p.nextToken() != null) throw Refusal.invalid(BODY, "must hold one JSON value, with nothing after it");
      return value;
    } catch (JsonProcessingException e) {
      throw Refusal.invalid(path(e), syntax(e));
    } catch (IOException e) {
      throw Refusal.invalid(BODY, "cannot be read");
    }
  }

  private static Object value(JsonParser p, JsonToken t, int depth) throws IOException {
    switch (t) {
      case START_OBJECT -> {
        if (depth > MAX_DEPTH) throw Refusal.invalid(path(p.getParsingContext().getParent()), "nests deeper than " + MAX_DEPTH + " levels");
        Map<String, Object> map = new LinkedHashMap<>();
        for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
          String key = p.currentName();
          checkText(key, p, true);
          Object v = value(p, p.nextToken(), depth + 1);
          if (map.containsKey(key)) throw Refusal.invalid(path(p.getParsingContext()), "is given twice");
          map.put(key, v);
        }
        return new JsonObject(map);
      }
      case START_ARRAY -> {
        if (depth > MAX_DEPTH) throw Refusal.invalid(path(p.getParsingContext().getParent()), "nests deeper than " + MAX_DEPTH + " levels");
        List<Object> list = new ArrayList<>();
        for (JsonToken v = p.nextToken(); v != JsonToken.END_ARRAY; v = p.nextToken()) list.add(value(p, v, depth + 1));
        return new JsonArray(list);
      }
      case VALUE_STRING -> {
        String s = p.getText();
        checkText(s, p, false);
        return s;
      }
      case VALUE_NUMBER_INT -> {
        return p.getNumberValue();
      }
      case VALUE_NUMBER_FLOAT -> {
        double d = p.getDoubleValue();
        if (Double.isInfinite(d)) throw Refusal.invalid(path(p.getParsingContext()), "must be a finite number");
        return d;
      }
      case VALUE_TRUE -> {
        return Boolean.TRUE;
      }
      case VALUE_FALSE -> {
        return Boolean.FALSE;
      }
      case VALUE_NULL -> {
        return null;
      }
      default -> throw Refusal.invalid(path(p.getParsingContext()), "unexpected " + t);
    }
  }

  /** NUL and unpaired surrogates: neither can be stored (PostgreSQL) nor re-encoded faithfully (UTF-8). */
  private static void checkText(String s, JsonParser p, boolean isKey) {
    String why = problem(s);
    if (why == null) return;
    JsonStreamContext at = p.getParsingContext();
    // a bad key is named by its container (the key itself is the unprintable part)
    throw Refusal.invalid(path(isKey ? at.getParent() : at), (isKey ? "has a key containing " : "must not contain ") + why);
  }

  /** What makes a string unacceptable ("the NUL character", "an unpaired surrogate"), or null. */
  public static String problem(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) return "the NUL character";
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return "an unpaired surrogate";
        }
      } else if (Character.isLowSurrogate(c)) {
        return "an unpaired surrogate";
      }
    }
    return null;
  }

  private static String syntax(JsonProcessingException e) {
    String m = e.getOriginalMessage();
    if (m == null) m = "is not valid JSON";
    int nl = m.indexOf('\n');
    if (nl >= 0) m = m.substring(0, nl);
    if (m.length() > 160) m = m.substring(0, 160) + "…";
    var loc = e.getLocation();
    return "is not valid JSON: " + m + (loc == null ? "" : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")");
  }

  private static String path(JsonProcessingException e) {
    return e.getProcessor() instanceof JsonParser p ? path(p.getParsingContext()) : BODY;
  }

  /**
   * The field a parsing context points at, in the API's field syntax: {@code telemetry.cpu},
   * {@code ingress[0].name}; keys that are not plain words are quoted ({@code telemetry["a b"]}).
   */
  static String path(JsonStreamContext ctx) {
    List<String> parts = new ArrayList<>();
    for (JsonStreamContext c = ctx; c != null && !c.inRoot(); c = c.getParent()) {
      if (c.inArray()) {
        parts.add("[" + Math.max(0, c.getCurrentIndex()) + "]");
      } else if (c.inObject() && c.getCurrentName() != null) {
        parts.add(member("", c.getCurrentName()));
      }
    }
    if (parts.isEmpty()) return BODY;
    StringBuilder sb = new StringBuilder();
    for (int i = parts.size() - 1; i >= 0; i--) sb.append(parts.get(i));
    return sb.charAt(0) == '.' ? sb.substring(1) : sb.toString();
  }

  /** The field name of member {@code key} of the object named {@code parent} ({@code ""} for the body). */
  public static String member(String parent, String key) {
    return parent + (PLAIN_KEY.matcher(key).matches() ? "." + key : "[" + quoted(key) + "]");
  }

  /** A key as a JSON string literal, shortened, with everything outside printable ASCII escaped. */
  private static String quoted(String key) {
    StringBuilder sb = new StringBuilder("\"");
    int n = Math.min(key.length(), 64);
    for (int i = 0; i < n; i++) {
      char c = key.charAt(i);
      if (c == '"' || c == '\\') sb.append('\\').append(c);
      else if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
      else sb.append(c);
    }
    if (key.length() > n) sb.append('…');
    return sb.append('"').toString();
  }
}
