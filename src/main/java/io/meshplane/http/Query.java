package io.meshplane.http;

import io.meshplane.common.Refusal;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The query parameters a route takes, declared once where the route is mounted ({@link Api#route}).
 * Any other parameter is refused before authentication: 400 {@code invalid_request} with one
 * {@code errors[]} entry per unknown parameter, named as sent, so a misspelt filter
 * ({@code ?stauts=stale}) is an error instead of a list that silently ignores it. The declared set of
 * every route equals the OpenAPI document's query parameters of its operation (a test checks it).
 */
public record Query(Set<String> names) {
  /** No query parameter at all: most routes. */
  public static final Query NONE = new Query(Set.of());

  public Query {
    names = Collections.unmodifiableSet(new TreeSet<>(names));
  }

  public static Query of(String... names) {
    return new Query(Set.of(names));
  }

  /** These and a page's {@code limit} and {@code cursor} ({@link Pages}). */
  public static Query paged(String... names) {
    Set<String> all = new TreeSet<>(Set.of(names));
    all.add("limit");
    all.add("cursor");
    return new Query(all);
  }

  /** Refuses the request when its query string holds a parameter not declared here. */
  void check(RoutingContext ctx) {
    if (ctx.request().query() == null) return; // most requests (every heartbeat): nothing to decode
    List<Refusal.FieldError> unknown = new ArrayList<>();
    String message = names.isEmpty() ? "unknown query parameter: this route takes none"
        : "unknown query parameter: this route takes " + String.join(", ", names);
    for (String name : ctx.queryParams().names()) {
      if (!names.contains(name)) unknown.add(new Refusal.FieldError(name, message));
    }
    if (!unknown.isEmpty()) throw Refusal.invalid(unknown);
  }
}
