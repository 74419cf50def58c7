package io.meshplane.node;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.auth.Permission;
import io.meshplane.auth.SecuredRoutes;
import io.meshplane.http.Cursors;
import io.meshplane.common.Fields;
import io.meshplane.http.Page;
import io.meshplane.http.Responses;
import io.meshplane.common.Times;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** {@code GET /v1/events}: node state changes (node.stale, node.online), oldest first, scoped and paged. */
public final class EventRoutes {
  private static final Set<String> TYPES = Set.of("node.stale", "node.online");
  private static final String QUERY = """
      SELECT id, at, type, node_id, node_name, team, environment, last_heartbeat FROM node_events
      WHERE ($1 = '*' OR team = $1) AND ($2 = '*' OR environment = $2)
        AND ($3::text IS NULL OR id > $3)
        AND ($4::timestamptz IS NULL OR at >= $4)
        AND ($5::text IS NULL OR type = $5)
        AND ($6::text IS NULL OR node_id = $6)
      ORDER BY id LIMIT $7""";

  private EventRoutes() {}

  public static void mount(SecuredRoutes api, Pool pool, Cursors cursors) {
    api.route(GET, "/v1/events", Permission.EVENTS_READ, "event.list", null, (ctx, caller) -> {
      Page page = Page.from(ctx, cursors, "events");
      Fields f = new Fields();
      String sinceRaw = ctx.request().getParam("since");
      Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
      String type = ctx.request().getParam("type");
      if (type != null && !TYPES.contains(type)) f.error("type", "must be node.stale or node.online");
      String node = ctx.request().getParam("node_id");
      if (node != null && !io.meshplane.common.Ids.looksLike("nd", node)) f.error("node_id", "is not a node id");
      f.check();
      Tuple args = Tuple.from(new Object[] {caller.scope().team(), caller.scope().environment(), page.afterPart(0),
          since == null ? null : since.atOffset(ZoneOffset.UTC), type, node, page.fetch()});
      return pool.preparedQuery(QUERY).execute(args).map(rows -> {
        List<JsonObject> events = new ArrayList<>();
        for (Row r : rows) {
          events.add(new JsonObject()
              .put("id", r.getString("id"))
              .put("at", Times.format(r.getOffsetDateTime("at")))
              .put("type", r.getString("type"))
              .put("node", new JsonObject().put("id", r.getString("node_id")).put("name", r.getString("node_name")))
              .put("team", r.getString("team"))
              .put("environment", r.getString("environment"))
              .put("last_heartbeat", Times.format(r.getOffsetDateTime("last_heartbeat"))));
        }
        Responses.ok(ctx, page.respond(events, e -> e, e -> List.of(e.getString("id"))));
        return null;
      });
    });
  }
}
