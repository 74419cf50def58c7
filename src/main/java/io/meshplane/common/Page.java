package io.meshplane.common;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;

/**
 * Keyset pagination (API.md §2): {@code ?limit=1..1000} (default 100) and an opaque {@code cursor} that
 * encodes the sort key of the last item returned, signed for its list. Queries ask for
 * {@code limit + 1} rows; the extra row only tells whether there is a next page. Stable under
 * inserts, O(limit) per page at any depth. A value: services and repositories take it; the HTTP layer
 * reads it from a request ({@code http.Pages}) and signs its cursors ({@code http.Cursors}).
 *
 * @param limit how many items the page holds
 * @param after the decoded sort key after which the page starts, or null for the first page
 * @param cursors signs the next cursor
 * @param list the list the cursors belong to ({@code nodes}, {@code tokens}, ...)
 */
public record Page(int limit, List<String> after, Signer cursors, String list, Offload offload) {
  public static final int DEFAULT_LIMIT = 100;
  public static final int MAX_LIMIT = 1000;

  /**
   * Where a page is built and encoded: off the event loop (the HTTP layer hands a worker), because a
   * page of 1,000 items takes milliseconds of JSON work that heartbeats on the same loop would wait
   * behind.
   */
  public interface Offload {
    <T> Future<T> run(Callable<T> work);
  }

  /** Builds the page on the calling thread (tests, tools). */
  public static final Offload INLINE = new Offload() {
    @Override
    public <T> Future<T> run(Callable<T> work) {
      try {
        return Future.succeededFuture(work.call());
      } catch (Exception e) {
        return Future.failedFuture(e);
      }
    }
  };

  public Page(int limit, List<String> after, Signer cursors, String list) {
    this(limit, after, cursors, list, INLINE);
  }

  /** Makes the opaque cursor that continues {@code list} after the item whose sort key is {@code key}. */
  public interface Signer {
    String encode(String list, List<String> key);
  }

  /** How many rows to fetch: one more than the page, to learn whether another page follows. */
  public int fetch() {
    return limit + 1;
  }

  /** Part {@code i} of the sort key to continue after; null on the first page. 400 if the cursor has fewer parts. */
  public String afterPart(int i) {
    if (after == null) return null;
    if (i >= after.size()) throw Refusal.invalid("cursor", "is not a cursor this API returned for this list");
    return after.get(i);
  }

  /** {@link #respond}, built and encoded where the page's {@link Offload} says (off the event loop, for requests). */
  public <T> Future<Buffer> render(List<T> rows, Function<T, JsonObject> toJson, Function<T, List<String>> key) {
    return offload.run(() -> respond(rows, toJson, key).toBuffer());
  }

  /** Builds {@code {items, next_cursor}} from up to {@link #fetch()} rows. */
  public <T> JsonObject respond(List<T> rows, Function<T, JsonObject> toJson, Function<T, List<String>> key) {
    JsonArray items = new JsonArray();
    int n = Math.min(rows.size(), limit);
    for (int i = 0; i < n; i++) items.add(toJson.apply(rows.get(i)));
    String next = rows.size() > limit ? cursors.encode(list, key.apply(rows.get(limit - 1))) : null;
    return new JsonObject().put("items", items).put("next_cursor", next);
  }
}
