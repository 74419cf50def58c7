package io.meshplane.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.function.Function;

/**
 * Keyset pagination (SPEC §2): {@code ?limit=1..1000} (default 100) and an opaque {@code cursor} that
 * encodes the sort key of the last item returned. Queries ask for {@code limit + 1} rows; the extra
 * row only tells whether there is a next page. Stable under inserts, O(limit) per page at any depth.
 *
 * @param limit how many items the page holds
 * @param after the decoded sort key after which the page starts, or null for the first page
 */
public record Page(int limit, List<String> after) {
  public static final int DEFAULT_LIMIT = 100;
  public static final int MAX_LIMIT = 1000;

  /** Reads {@code limit} and {@code cursor} from the query string; 400 naming the parameter when bad. */
  public static Page from(RoutingContext ctx) {
    String rawLimit = ctx.request().getParam("limit");
    int limit = DEFAULT_LIMIT;
    if (rawLimit != null) {
      try {
        limit = Integer.parseInt(rawLimit);
      } catch (NumberFormatException e) {
        throw ApiError.invalid("limit", "must be a whole number from 1 to " + MAX_LIMIT);
      }
      if (limit < 1 || limit > MAX_LIMIT) throw ApiError.invalid("limit", "must be from 1 to " + MAX_LIMIT);
    }
    String cursor = ctx.request().getParam("cursor");
    return new Page(limit, cursor == null || cursor.isEmpty() ? null : decode(cursor));
  }

  /** How many rows to fetch: one more than the page, to learn whether another page follows. */
  public int fetch() {
    return limit + 1;
  }

  public String afterPart(int i) {
    return after == null ? null : after.get(i);
  }

  /** Builds {@code {items, next_cursor}} from up to {@link #fetch()} rows. */
  public <T> JsonObject respond(List<T> rows, Function<T, JsonObject> toJson, Function<T, List<String>> key) {
    JsonArray items = new JsonArray();
    int n = Math.min(rows.size(), limit);
    for (int i = 0; i < n; i++) items.add(toJson.apply(rows.get(i)));
    String next = rows.size() > limit ? encode(key.apply(rows.get(limit - 1))) : null;
    return new JsonObject().put("items", items).put("next_cursor", next);
  }

  public static String encode(List<String> key) {
    String json = new JsonArray(List.copyOf(key)).encode();
    return Base64.getUrlEncoder().withoutPadding().encodeToString(json.getBytes(StandardCharsets.UTF_8));
  }

  static List<String> decode(String cursor) {
    try {
      if (cursor.length() > 512) throw new IllegalArgumentException();
      JsonArray a = new JsonArray(new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8));
      if (a.isEmpty()) throw new IllegalArgumentException();
      for (Object o : a) {
        if (!(o instanceof String)) throw new IllegalArgumentException();
      }
      @SuppressWarnings("unchecked")
      List<String> list = (List<String>) (List<?>) a.getList();
      return List.copyOf(list);
    } catch (RuntimeException e) {
      throw ApiError.invalid("cursor", "is not a cursor returned by this API");
    }
  }
}
