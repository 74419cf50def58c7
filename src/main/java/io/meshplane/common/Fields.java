package io.meshplane.common;

import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Reads and validates the fields of a JSON body, collecting every problem before failing, so one 400
 * names all bad fields at once. Wrong JSON types are errors, never coerced.
 */
public final class Fields {
  private static final Pattern SLUG = Pattern.compile("^[a-z0-9][a-z0-9-]{0,62}$");
  private final List<Refusal.FieldError> errors = new ArrayList<>();

  public void error(String field, String message) {
    errors.add(new Refusal.FieldError(field, message));
  }

  public boolean ok() {
    return errors.isEmpty();
  }

  /** Throws the collected problems as one 400 {@code invalid_request}. */
  public void check() {
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
  }

  /** A required string; null (with an error recorded) when missing or not a string. */
  public String string(JsonObject o, String key, String field) {
    Object v = o == null ? null : o.getValue(key);
    if (v == null) {
      error(field, "is required");
      return null;
    }
    if (!(v instanceof String s)) {
      error(field, "must be a string");
      return null;
    }
    return s;
  }

  public String optionalString(JsonObject o, String key, String field) {
    Object v = o == null ? null : o.getValue(key);
    if (v == null) return null;
    if (!(v instanceof String s)) {
      error(field, "must be a string");
      return null;
    }
    return s;
  }

  public JsonObject object(JsonObject o, String key, String field) {
    Object v = o.getValue(key);
    if (v == null) {
      error(field, "is required");
      return null;
    }
    if (!(v instanceof JsonObject j)) {
      error(field, "must be an object");
      return null;
    }
    return j;
  }

  /** A name people read: 1..max printable characters, no control characters, not blank. */
  public String label(JsonObject o, String key, String field, int max) {
    String s = string(o, key, field);
    if (s == null) return null;
    if (s.isBlank() || s.codePointCount(0, s.length()) > max) {
      error(field, "must be 1-" + max + " characters");
      return null;
    }
    if (s.codePoints().anyMatch(c -> Character.isISOControl(c) || Character.getType(c) == Character.FORMAT)) {
      error(field, "must contain printable characters only");
      return null;
    }
    return s;
  }

  /** A team/environment slug, or {@code *} when wildcards are allowed. */
  public String slugOrStar(JsonObject o, String key, String field) {
    String s = string(o, key, field);
    if (s == null) return null;
    if (!s.equals("*") && !SLUG.matcher(s).matches()) {
      error(field, "must be '*' or lower-case letters, digits and '-' (1-63, starting with a letter or digit)");
      return null;
    }
    return s;
  }

  /** An ISO 8601 timestamp with a zone ({@code Z} or an offset). */
  public Instant timestamp(JsonObject o, String key, String field) {
    String s = string(o, key, field);
    return s == null ? null : parseTimestamp(s, field);
  }

  public Instant parseTimestamp(String s, String field) {
    try {
      return OffsetDateTime.parse(s, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
    } catch (DateTimeParseException e) {
      error(field, "must be an ISO 8601 timestamp with a zone, e.g. 2026-12-31T23:59:59Z");
      return null;
    }
  }

  public static boolean isSlug(String s) {
    return s != null && SLUG.matcher(s).matches();
  }
}
