package io.meshplane.heartbeat;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.Pages;
import io.meshplane.http.Responses;
import java.time.Instant;
import java.util.Set;

/** {@code GET /events}: node state changes (node.stale, node.online, node.policy_drift, node.enroll_unconfirmed), oldest first, scoped and paged. */
final class EventRoutes {
  private static final Set<String> TYPES = Set.of("node.stale", "node.online", "node.policy_drift", "node.enroll_unconfirmed");

  private EventRoutes() {}

  static void mount(Api api, EventService events, Cursors cursors) {
    api.route(GET, "/events", Permission.EVENTS_READ, "event.list", null, Query.paged("since", "type", "node_id"), (ctx, caller) -> {
      Page page = Pages.from(ctx, cursors, "events");
      Fields f = new Fields();
      String sinceRaw = ctx.request().getParam("since");
      Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
      String type = ctx.request().getParam("type");
      if (type != null && !TYPES.contains(type)) f.error("type", "must be node.stale, node.online, node.policy_drift or node.enroll_unconfirmed");
      String node = ctx.request().getParam("node_id");
      if (node != null && !Ids.looksLike("nd", node)) f.error("node_id", "is not a node id");
      f.check();
      return events.list(caller, since, type, node, page)
          .map(body -> {
            Responses.ok(ctx, body);
            return null;
          });
    });
  }
}
