package io.meshplane.audit;

import static io.vertx.core.http.HttpMethod.GET;

import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.NameFilter;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.Pages;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;
import java.time.Instant;
import java.util.List;
import java.util.regex.Pattern;

/** {@code GET /audit}: the trail, newest first, filtered, keyset-paginated, inside the caller's scope. */
final class AuditRoutes {
  private static final Pattern ACTION = Pattern.compile("^[a-z][a-z_.]{0,63}$");
  private static final Pattern ACTOR = Pattern.compile("^[A-Za-z0-9_\\-]{1,64}$");

  private AuditRoutes() {}

  public static void mount(Api api, AuditLog audit, Cursors cursors) {
    api.route(GET, "/audit", Permission.AUDIT_READ, "audit.read", null, Query.paged("actor_id", "actor_name", "action", "since"), (ctx, caller) -> list(ctx, caller, audit, cursors));
  }

  private static Future<Void> list(RoutingContext ctx, Caller caller, AuditLog audit, Cursors cursors) {
    Page page = Pages.from(ctx, cursors, "audit");
    Fields f = new Fields();
    String actor = ctx.request().getParam("actor_id");
    if (actor != null && !ACTOR.matcher(actor).matches()) f.error("actor_id", "is not an id");
    String actorName = ctx.request().getParam("actor_name");
    if (actorName != null && !NameFilter.valid(actorName)) f.error("actor_name", NameFilter.RULE);
    String action = ctx.request().getParam("action");
    if (action != null && !ACTION.matcher(action).matches()) f.error("action", "is not an action name such as token.create");
    String sinceRaw = ctx.request().getParam("since");
    Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
    f.check();
    Instant afterAt = null;
    String afterId = null;
    if (page.after() != null) {
      try {
        afterAt = Instant.parse(page.afterPart(0));
        afterId = page.afterPart(1);
      } catch (RuntimeException e) {
        throw Refusal.invalid("cursor", "is not a cursor returned by this API");
      }
    }
    return audit.list(caller.boundary(), actor, actorName, action, since, afterAt, afterId, page.fetch())
        .compose(events -> page.render(events, AuditEvent::toJson, e -> List.of(e.at().toString(), e.id())))
        .map(body -> {
          Responses.ok(ctx, body);
          return null;
        });
  }
}
