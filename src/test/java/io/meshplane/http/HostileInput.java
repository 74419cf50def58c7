package io.meshplane.http;

import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The vocabulary of {@link HostileInputTest}'s cases: the kinds of breakage, the fields of a body, the
 * routes (with a body, with query parameters, with a path parameter) and one hostile request with its expected answer.
 */
final class HostileInput {
  private HostileInput() {}

  enum Breakage {
    TRUNCATED, WRONG_TYPE, NULL_REQUIRED, NUL_CHARACTER, CONTROL_CHARACTER, LONE_SURROGATE, BAD_UTF8, DEEP_NESTING, HUGE_ARRAY,
    LONG_ARRAY, INFINITE_NUMBER, COMMENT, DUPLICATE_KEY, TRAILING_GARBAGE, UTF16_BOM, WRONG_MEDIA_TYPE, BAD_PATH_ESCAPE,
    BAD_QUERY_VALUE, QUERY_SEMICOLON, QUERY_REPEATED, FORGED_CURSOR, HOSTILE_ID, OVERSIZE_HEADERS, OVERSIZE_URI, BAD_CHUNKING
  }

  /** The breakages of a query string; of an id in the path; of the HTTP framing alone; the rest break a body. */
  static final Set<Breakage> QUERY = Set.of(Breakage.BAD_QUERY_VALUE, Breakage.QUERY_SEMICOLON, Breakage.QUERY_REPEATED,
      Breakage.FORGED_CURSOR);
  static final Set<Breakage> FRAMING = Set.of(Breakage.OVERSIZE_HEADERS, Breakage.OVERSIZE_URI);
  /** The breakages of a body that the route's own checks refuse (the parser refuses the others). */
  static final Set<Breakage> FIELD_CHECKS = Set.of(Breakage.WRONG_TYPE, Breakage.NULL_REQUIRED, Breakage.CONTROL_CHARACTER,
      Breakage.LONG_ARRAY);

  /** Deepest nesting a body may have (the server's StrictJsonReader.MAX_DEPTH; docs/API.md §1). */
  static final int MAX_DEPTH = 32;

  enum Kind { STRING, NUMBER, BOOLEAN, OBJECT, ARRAY }

  /**
   * A field of a body: its place as the JSON parser names it ({@code scope.team}, {@code ingress[0].name}),
   * the name the route's own validation gives it (the same, or a JSON pointer such as
   * {@code /grants/0/src} for a policy), its JSON type, and what it refuses. A field the route does not
   * read ({@code checked} false: unknown fields are ignored, API.md §1) only carries breakages of the syntax.
   */
  record Field(String path, String name, Kind kind, boolean refusesNull, boolean refusesControl, boolean checked) {
    Field(String path, Kind kind, boolean refusesNull, boolean refusesControl) {
      this(path, path, kind, refusesNull, refusesControl, true);
    }

    /** A field of a policy document, named by JSON pointer in refusals ({@code grants[0].src} is {@code /grants/0/src}). */
    static Field pointer(String path, Kind kind, boolean refusesNull, boolean refusesControl) {
      return new Field(path, "/" + path.replace("]", "").replace('[', '/').replace('.', '/'), kind, refusesNull, refusesControl, true);
    }

    static Field ignored(String path) {
      return new Field(path, path, Kind.STRING, false, false, false);
    }
  }

  /** Where a request goes and with what credential: a port, and the headers that authenticate it (bearer, or cookie + CSRF). */
  record Door(int port, Map<String, String> headers) {}

  /**
   * A route that takes a body: the operation as openapi.yaml names it ({@code template}), the concrete
   * path and query it is sent to, and a valid body to break with its fields.
   */
  record BodyRoute(HttpMethod method, String template, String path, String query, Door door, JsonObject body, List<Field> fields) {
    String target() {
      return query.isEmpty() ? path : path + "?" + query;
    }
  }

  /**
   * A route that takes query parameters: each with a value that is valid for it; the list its cursors
   * belong to (null when it is not paged); a valid body when the method takes one.
   */
  record QueryRoute(HttpMethod method, String template, String path, Door door, Map<String, String> params, String list, JsonObject body) {}

  /** A route with a path parameter: {@code target} has {@code {hostile}} where {@code param} goes, every other parameter valid. */
  record IdRoute(HttpMethod method, String template, String param, String target, Door door, Set<Integer> statuses) {}

  /**
   * One hostile request and what the answer must be: one of {@code statuses}; a problem naming
   * {@code field} when not null (exactly, or for the route's own validation, as the start of a name:
   * {@code scope} is named by {@code scope.team} as well).
   */
  record Case(Breakage breakage, String what, HttpMethod method, int port, String target, String contentType, byte[] body,
      Map<String, String> headers, Set<Integer> statuses, String field, boolean exact, byte[] raw) {
    @Override
    public String toString() {
      return breakage + " " + what + " -> " + statuses + (field == null ? "" : " naming " + field);
    }
  }
}
