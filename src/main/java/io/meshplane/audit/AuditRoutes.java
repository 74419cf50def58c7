package io.meshplane.audit;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.auth.Permission;
import io.meshplane.auth.Principal;
import io.meshplane.auth.SecuredRoutes;
import io.meshplane.common.Refusal;
import io.meshplane.http.Cursors;
import io.meshplane.common.Fields;
import io.meshplane.http.Page;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/** {@code GET /v1/audit}: the trail, newest first, filtered, keyset-paginated, inside the caller's scope. */
public final class AuditRoutes {
  private static final Pattern ACTION = Pattern.compile("^[a-z][a-z_.]{0,63}$");
  private static final Pattern ACTOR = Pattern.compile("^[A-Za-z0-9_\\-]{1,64}$");
  private static final String QUERY = """
      SELECT id, at, actor_type, actor_id, actor_name, action, target_type, target_id, outcome, request_id, source_ip,
             team, environment
      FROM audit_events
      WHERE ($1 = '*' OR team = $1) AND ($2 = '*' OR environment = $2)
        AND ($3::text IS NULL OR actor_id = $3)
        AND ($4::text IS NULL OR action = $4)
        AND ($5::timestamptz IS NULL OR at >= $5)
        AND ($6::timestamptz IS NULL OR (at, id) < ($6, $7))
      ORDER BY at DESC, id DESC
      LIMIT $8""";

  private AuditRoutes() {}

  public static void mount(SecuredRoutes api, Pool pool, Cursors cursors) {
    api.route(GET, "/v1/audit", Permission.AUDIT_READ, "audit.read", null, (ctx, caller) -> list(ctx, caller, pool, cursors));
  }

  private static Future<Void> list(RoutingContext ctx, Principal caller, Pool pool, Cursors cursors) {
    Page page = Page.from(ctx, cursors, "audit");
    Fields f = new Fields();
    String actor = ctx.request().getParam("actor_id");
    if (actor != null && !ACTOR.matcher(actor).matches()) f.error("actor_id", "is not an id");
    String action = ctx.request().getParam("action");
    if (action != null && !ACTION.matcher(action).matches()) f.error("action", "is not an action name such as token.create");
    String sinceRaw = ctx.request().getParam("since");
    Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
    f.check();
    OffsetDateTime afterAt = null;
    String afterId = null;
    if (page.after() != null) {
      try {
        afterAt = Instant.parse(page.afterPart(0)).atOffset(ZoneOffset.UTC);
        afterId = page.afterPart(1);
      } catch (RuntimeException e) {
        throw Refusal.invalid("cursor", "is not a cursor returned by this API");
      }
    }
    Tuple args = Tuple.from(new Object[] {caller.scope().team(), caller.scope().environment(), actor, action,
        since == null ? null : since.atOffset(ZoneOffset.UTC), afterAt, afterId, page.fetch()});
    return pool.preparedQuery(QUERY).execute(args).map(rows -> {
      List<AuditEvent> events = new ArrayList<>();
      for (Row r : rows) events.add(map(r));
      Responses.ok(ctx, page.respond(events, AuditEvent::toJson, e -> List.of(e.at().toString(), e.id())));
      return null;
    });
  }

  private static AuditEvent map(Row r) {
    return new AuditEvent(r.getString("id"), r.getOffsetDateTime("at").toInstant(), r.getString("actor_type"),
        r.getString("actor_id"), r.getString("actor_name"), r.getString("action"), r.getString("target_type"),
        r.getString("target_id"), r.getString("outcome"), r.getString("request_id"), r.getString("source_ip"),
        r.getString("team"), r.getString("environment"));
  }
}
