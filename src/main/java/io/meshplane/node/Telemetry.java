package io.meshplane.node;

import io.meshplane.common.Fields;
import io.meshplane.common.Refusal;
import io.meshplane.common.StrictJsonReader;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A node's telemetry (API.md §8): a JSON object the agent reports as it likes, bounded so that every
 * record stays storable and encodable: at most {@link #MAX_DEPTH} levels (the object itself is level
 * 1), keys of at most {@link #MAX_KEY} characters, at most {@link #MAX_BYTES} bytes encoded, finite
 * numbers, no NUL (the body parser already refuses NUL, lone surrogates and infinities).
 */
public final class Telemetry {
  public static final int MAX_DEPTH = 8;
  public static final int MAX_KEY = 64;
  public static final int MAX_BYTES = 4096;
  private static final String EMPTY = "{}";

  private Telemetry() {}

  /** Checks a reported telemetry object; returns its encoded form, or null with the problem recorded in {@code f}. */
  public static String validate(Fields f, String field, JsonObject telemetry) {
    Problem p = check(telemetry, 1);
    if (p != null) {
      f.error(p.path(field), p.message);
      return null;
    }
    String encoded = telemetry.encode();
    if (encoded.length() > MAX_BYTES / 4 && encoded.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
      f.error(field, "must be at most " + MAX_BYTES + " bytes when encoded as JSON");
      return null;
    }
    return encoded;
  }

  /**
   * The first problem in a value, with the path from the value down to it, innermost first. The path
   * is built only when there is a problem: a heartbeat's telemetry is checked on the hot path.
   */
  private static final class Problem {
    final String message;
    final List<Object> reversedPath = new ArrayList<>(); // String keys and Integer indexes

    Problem(String message) {
      this.message = message;
    }

    String path(String root) {
      String p = root;
      for (int i = reversedPath.size() - 1; i >= 0; i--) {
        Object part = reversedPath.get(i);
        p = part instanceof Integer index ? p + "[" + index + "]" : StrictJsonReader.member(p, (String) part);
      }
      return p;
    }
  }

  private static Problem check(Object value, int depth) {
    if (value instanceof JsonObject o) {
      if (depth > MAX_DEPTH) return new Problem("nests deeper than " + MAX_DEPTH + " levels");
      for (Map.Entry<String, Object> e : o) {
        String key = e.getKey();
        if (key.length() > MAX_KEY && key.codePointCount(0, key.length()) > MAX_KEY) {
          return new Problem("has a key longer than " + MAX_KEY + " characters");
        }
        Problem p = check(e.getValue(), depth + 1);
        if (p != null) {
          p.reversedPath.add(key);
          return p;
        }
      }
    } else if (value instanceof JsonArray a) {
      if (depth > MAX_DEPTH) return new Problem("nests deeper than " + MAX_DEPTH + " levels");
      for (int i = 0; i < a.size(); i++) {
        Problem p = check(a.getValue(i), depth + 1);
        if (p != null) {
          p.reversedPath.add(i);
          return p;
        }
      }
    } else if (value instanceof Double d && !Double.isFinite(d) || value instanceof Float fl && !Float.isFinite(fl)) {
      return new Problem("must be a finite number");
    } else if (value instanceof String s && StrictJsonReader.problem(s) != null) {
      return new Problem("must not contain " + StrictJsonReader.problem(s));
    }
    return null;
  }

  /**
   * Stored or live telemetry as an object for a node record. Text that cannot be read within the
   * bounds (written before they existed, say) gives {@code {}}: one node's telemetry never makes a
   * list of nodes fail. Returns null in that case so the caller can tell.
   */
  public static JsonObject read(String text) {
    if (text == null || text.isEmpty() || text.equals(EMPTY)) return new JsonObject();
    try {
      Object v = StrictJsonReader.parse(text.getBytes(StandardCharsets.UTF_8));
      if (!(v instanceof JsonObject o)) return null;
      return check(o, 1) == null ? o : null;
    } catch (Refusal e) {
      return null;
    }
  }
}
