package io.meshplane.ingress;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;
import static io.vertx.core.http.HttpMethod.PUT;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Page;
import io.meshplane.common.StrictJsonReader;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Params;
import io.meshplane.http.Query;
import io.meshplane.http.Responses;
import io.meshplane.node.NodeFormats;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.Set;

/** {@code /ingress/routes} under an API (API.md §19): parsing and answers here, rules in {@link IngressService}. */
final class IngressRoutes {
  private static final Set<String> FIELDS = Set.of("team", "environment", "position", "hostname", "path_prefix", "target", "exposure", "tls",
      "ingress_tag");
  /** Read-only fields a replace may echo from a GET (ignored; {@code id} must be the path's). */
  private static final Set<String> ECHOED = Set.of("id", "status", "created_at", "updated_at");
  private static final Set<String> EXPOSURES = Set.of("public", "mesh");
  private static final Set<String> TLS = Set.of("acme", "meshca");

  private IngressRoutes() {}

  static void mount(Api api, IngressService routes, Cursors cursors) {
    api.route(GET, "/ingress/routes", Permission.INGRESS_READ, "ingress.route.read", null, Query.paged("team", "environment", "hostname"),
        (ctx, caller) -> {
          Fields f = new Fields();
          String team = slug(f, ctx, "team");
          String env = slug(f, ctx, "environment");
          String hostname = ctx.request().getParam("hostname");
          if (hostname != null) {
            String why = IngressNames.hostname(hostname);
            if (why != null) f.error("hostname", why);
          }
          f.check();
          Page page = Pages.from(ctx, cursors, "ingress-routes");
          String t = team != null ? team : caller.team();
          String e = env != null ? env : caller.environment();
          boolean one = !Boundary.ALL.equals(t) && !Boundary.ALL.equals(e);
          return routes.list(caller, team, env, hostname, page).compose(body -> (one ? routes.version(t, e) : io.vertx.core.Future.succeededFuture(-1L))
              .map(v -> {
                if (v >= 0) ctx.response().putHeader("ETag", "\"" + v + "\"");
                Responses.ok(ctx, body);
                return null;
              }));
        });
    api.route(GET, "/ingress/routes/{id}", Permission.INGRESS_READ, "ingress.route.read", "ingress_route", (ctx, caller) ->
        routes.get(caller, Params.pathId(ctx, "ir", "ingress route")).map(done -> respond(ctx, 200, done)));
    api.route(POST, "/ingress/routes", Permission.INGRESS_WRITE, "ingress.route.create", "ingress_route", (ctx, caller) -> {
      IngressService.Spec spec = spec(JsonBodies.required(ctx), caller, null);
      return routes.create(caller, Api.request(ctx), spec).map(done -> respond(ctx, 201, done));
    });
    api.route(PUT, "/ingress/routes/{id}", Permission.INGRESS_WRITE, "ingress.route.update", "ingress_route", (ctx, caller) -> {
      String id = Params.pathId(ctx, "ir", "ingress route");
      Long ifMatch = ifMatch(ctx);
      IngressService.Spec spec = spec(JsonBodies.required(ctx), caller, id);
      return routes.replace(caller, Api.request(ctx), id, spec, ifMatch).map(done -> respond(ctx, 200, done));
    });
    api.route(DELETE, "/ingress/routes/{id}", Permission.INGRESS_WRITE, "ingress.route.delete", "ingress_route", (ctx, caller) -> {
      String id = Params.pathId(ctx, "ir", "ingress route");
      Long ifMatch = ifMatch(ctx);
      return routes.delete(caller, Api.request(ctx), id, ifMatch).map(done -> {
        ctx.response().putHeader("ETag", "\"" + done.version() + "\"");
        Responses.noContent(ctx);
        return null;
      });
    });
  }

  private static Void respond(RoutingContext ctx, int status, IngressService.Done done) {
    ctx.response().putHeader("ETag", "\"" + done.version() + "\"");
    Responses.json(ctx, status, IngressService.toJson(done.route()));
    return null;
  }

  /** A route body: every field checked, every problem named; team and environment default to the caller's own where single. */
  static IngressService.Spec spec(JsonObject body, Caller caller, String id) {
    Fields f = new Fields();
    for (String k : body.fieldNames()) {
      if (FIELDS.contains(k)) continue;
      if (id != null && ECHOED.contains(k)) {
        if (k.equals("id") && !id.equals(body.getValue("id"))) f.error("id", "must be the path's route id, or left out");
        continue;
      }
      String name = StrictJsonReader.member("", k);
      f.error(name.startsWith(".") ? name.substring(1) : name, "is not a field of an ingress route");
    }
    String team = part(f, body, "team", caller.team());
    String env = part(f, body, "environment", caller.environment());
    Integer position = null;
    Object p = body.getValue("position");
    if (p != null) {
      if (!(p instanceof Integer i) || i < 1 || i > IngressService.MAX_ROUTES) {
        f.error("position", "must be a whole number from 1 to " + IngressService.MAX_ROUTES);
      } else {
        position = i;
      }
    }
    String hostname = f.string(body, "hostname", "hostname");
    if (hostname != null) {
      String why = IngressNames.hostname(hostname);
      if (why != null) f.error("hostname", why);
    }
    String path = f.optionalString(body, "path_prefix", "path_prefix");
    if (path == null) {
      path = "/";
    } else {
      String why = IngressNames.pathPrefix(path);
      if (why != null) f.error("path_prefix", why);
    }
    String node = null;
    String service = null;
    JsonObject target = f.object(body, "target", "target");
    if (target != null) {
      for (String k : target.fieldNames()) {
        if (!k.equals("node") && !k.equals("service")) f.error(StrictJsonReader.member("target", k), "is not a field of a target (node, service)");
      }
      node = f.string(target, "node", "target.node");
      if (node != null && !io.meshplane.common.Ids.looksLike("nd", node)) f.error("target.node", "must be a node id (nd_…)");
      service = f.string(target, "service", "target.service");
      if (service != null && !NodeFormats.service(service + ":1")) f.error("target.service", "must be a bound service's name (a-z, 0-9, '-')");
    }
    String exposure = f.string(body, "exposure", "exposure");
    if (exposure != null && !EXPOSURES.contains(exposure)) f.error("exposure", "must be public or mesh");
    String tls = f.string(body, "tls", "tls");
    if (tls != null && !TLS.contains(tls)) f.error("tls", "must be acme or meshca");
    String tag = f.string(body, "ingress_tag", "ingress_tag");
    if (tag != null && !NodeFormats.tag(tag)) f.error("ingress_tag", "must be tag:<slug>");
    f.check();
    return new IngressService.Spec(team, env, position, hostname, path, node, service, exposure, tls, tag);
  }

  private static String part(Fields f, JsonObject body, String key, String callers) {
    Object v = body.getValue(key);
    if (v == null) {
      if (Boundary.ALL.equals(callers)) f.error(key, "is required when your credential covers every " + key);
      return callers;
    }
    if (!(v instanceof String s) || !Fields.isSlug(s)) {
      f.error(key, "must be lower-case letters, digits and '-'");
      return callers;
    }
    return s;
  }

  private static String slug(Fields f, RoutingContext ctx, String key) {
    String v = ctx.request().getParam(key);
    if (v == null) return null;
    if (!Fields.isSlug(v)) f.error(key, "must be lower-case letters, digits and '-'");
    return v;
  }

  /** {@code If-Match}: see {@link Params#ifMatchVersion}. */
  private static Long ifMatch(RoutingContext ctx) {
    return Params.ifMatchVersion(ctx, "the routes version");
  }
}
