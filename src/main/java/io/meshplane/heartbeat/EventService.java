package io.meshplane.heartbeat;

import io.meshplane.access.Caller;
import io.meshplane.common.Page;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.time.Instant;
import java.util.List;

/** The node state events of the caller's boundary ({@code GET /events}), oldest first, filtered, a page at a time. */
final class EventService {
  private final LiveRepository repository;

  EventService(LiveRepository repository) {
    this.repository = repository;
  }

  /** A page after the cursor's event, with the filters given (null: any); built and encoded off the event loop. */
  Future<Buffer> list(Caller caller, Instant since, String type, String nodeId, Page page) {
    return repository.events(caller.boundary(), page.afterPart(0), since, type, nodeId, page.fetch())
        .compose(events -> page.render(events, e -> e, e -> List.of(e.getString("id"))));
  }
}
