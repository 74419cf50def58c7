package io.meshplane.heartbeat;

import io.meshplane.access.Caller;
import io.meshplane.common.Page;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.time.Instant;
import java.util.List;

/** The node state events of the caller's boundary ({@code GET /events}), oldest or newest first, filtered, a page at a time. */
final class EventService {
  /** The orders of {@code GET /events}: {@code oldest} first (the default) or {@code newest} first. */
  enum Order {
    OLDEST("events"), NEWEST("events.newest");

    /** The list a cursor of this order belongs to: a cursor of one order is refused by the other (400 {@code cursor}). */
    final String list;

    Order(String list) {
      this.list = list;
    }
  }

  /** The filters of a page (null: any). {@code nodeName} is a prefix of the node's name. */
  record Filter(Instant since, String type, String nodeId, String nodeName, Order order) {}

  private final LiveRepository repository;

  EventService(LiveRepository repository) {
    this.repository = repository;
  }

  /** A page after the cursor's event, with the filters given; built and encoded off the event loop. */
  Future<Buffer> list(Caller caller, Filter f, Page page) {
    return repository.events(caller.boundary(), page.afterPart(0), f.since(), f.type(), f.nodeId(), f.nodeName(), f.order() == Order.NEWEST,
            page.fetch())
        .compose(events -> page.render(events, e -> e, e -> List.of(e.getString("id"))));
  }
}
