package io.meshplane.heartbeat;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.NameFilter;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.Pages;
import io.meshplane.http.Responses;
import java.time.Instant;
import java.util.Set;

/**
 * {@code GET /events}: node state changes (node.stale, node.online, node.policy_drift, node.enroll_unconfirmed),
 * oldest first unless {@code order=newest}, scoped and paged.
 */
final class EventRoutes {
  private static final Set<String> TYPES = Set.of("node.stale", "node.online", "node.policy_drift", "node.enroll_unconfirmed");

  private EventRoutes() {}

  static void mount(Api api, EventService events, Cursors cursors) {
    api.route(GET, "/events", Permission.EVENTS_READ, "event.list", null, Query.paged("since", "type", "node_id", "node_name", "order"),
        (ctx, caller) -> {
      Fields f = new Fields();
      String orderRaw = ctx.request().getParam("order");
      EventService.Order order = EventService.Order.OLDEST;
      if ("newest".equals(orderRaw)) order = EventService.Order.NEWEST;
      else if (orderRaw != null && !"oldest".equals(orderRaw)) f.error("order", "must be oldest or newest");
      Page page = Pages.from(ctx, cursors, order.list);
      String sinceRaw = ctx.request().getParam("since");
      Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
      String type = ctx.request().getParam("type");
      if (type != null && !TYPES.contains(type)) f.error("type", "must be node.stale, node.online, node.policy_drift or node.enroll_unconfirmed");
      String node = ctx.request().getParam("node_id");
      if (node != null && !Ids.looksLike("nd", node)) f.error("node_id", "is not a node id");
      String nodeName = ctx.request().getParam("node_name");
      if (nodeName != null && !NameFilter.valid(nodeName)) f.error("node_name", NameFilter.RULE);
      f.check();
      return events.list(caller, new EventService.Filter(since, type, node, nodeName, order), page)
          .map(body -> {
            Responses.ok(ctx, body);
            return null;
          });
    });
  }
}
