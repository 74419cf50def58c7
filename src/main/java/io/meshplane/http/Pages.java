package io.meshplane.http;

import io.meshplane.common.Page;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;
import java.util.concurrent.Callable;

/** Reads a {@link Page} from a request's query string: the HTTP side of keyset pagination. */
public final class Pages {
  private Pages() {}

  /** Reads {@code limit} and {@code cursor} from the query string; 400 naming the parameter when bad. */
  public static Page from(RoutingContext ctx, Cursors cursors, String list) {
    return from(ctx, cursors, list, Page.DEFAULT_LIMIT);
  }

  /** As {@link #from(RoutingContext, Cursors, String)}, for a list whose {@code limit} defaults to {@code defaultLimit}. */
  public static Page from(RoutingContext ctx, Cursors cursors, String list, int defaultLimit) {
    int limit = Params.integer(ctx, "limit", 1, Page.MAX_LIMIT, defaultLimit);
    String cursor = ctx.request().getParam("cursor");
    return new Page(limit, cursor == null || cursor.isEmpty() ? null : cursors.decode(list, cursor), cursors, list, worker(ctx.vertx()));
  }

  /** Work whose cost grows with the data, run on a worker thread (unordered), never the event loop: a page's, a bulk's filter's. */
  public static Page.Offload worker(Vertx vertx) {
    return new Page.Offload() {
      @Override
      public <T> Future<T> run(Callable<T> work) {
        return vertx.executeBlocking(work, false);
      }
    };
  }
}
