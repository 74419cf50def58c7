package io.meshplane.wafpolicy;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;
import static io.vertx.core.http.HttpMethod.PUT;

import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Page;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Params;
import io.meshplane.http.Query;
import io.meshplane.http.Responses;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code /waf} under an API (API.md §20): parsing and answers here, rules in {@link WafPolicyService}. */
final class WafPolicyRoutes {
  private static final Query SCOPE = Query.of("team", "environment");

  private WafPolicyRoutes() {}

  static void mount(Api api, WafPolicyService policies, Cursors cursors) {
    api.route(GET, "/waf", Permission.WAF_READ, "waf.read", null, SCOPE, (ctx, caller) ->
        policies.get(caller, scope(ctx, caller)).map(body -> respond(ctx, body)));
    api.route(PUT, "/waf", Permission.WAF_WRITE, "waf.update", "waf", SCOPE, (ctx, caller) -> {
      WafPolicyService.Scope scope = scope(ctx, caller);
      Long ifMatch = Params.ifMatchVersion(ctx, "the traffic policy version");
      String document = JsonBodies.required(ctx).encode();
      return policies.put(caller, Api.request(ctx), scope, document, ifMatch).map(body -> respond(ctx, body));
    });
    api.route(GET, "/waf/versions", Permission.WAF_READ, "waf.read", null, Query.paged("team", "environment"), (ctx, caller) -> {
      WafPolicyService.Scope scope = scope(ctx, caller);
      Page page = Pages.from(ctx, cursors, "waf-versions:" + scope.group());
      return policies.versions(caller, scope, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
    api.route(GET, "/waf/versions/{version}", Permission.WAF_READ, "waf.read", null, SCOPE, (ctx, caller) ->
        policies.version(caller, scope(ctx, caller), version(ctx)).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(POST, "/waf/versions/{version}/restore", Permission.WAF_WRITE, "waf.rollback", "waf", SCOPE, (ctx, caller) -> {
      WafPolicyService.Scope scope = scope(ctx, caller);
      long from = version(ctx);
      Long ifMatch = Params.ifMatchVersion(ctx, "the traffic policy version");
      return policies.restore(caller, Api.request(ctx), scope, from, ifMatch).map(body -> respond(ctx, body));
    });
    api.route(GET, "/waf/samples", Permission.WAF_READ, "waf.read", null, SCOPE, (ctx, caller) ->
        policies.samples(caller, scope(ctx, caller)).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(POST, "/waf/preview", Permission.WAF_READ, "waf.preview", null, SCOPE, (ctx, caller) -> {
      WafPolicyService.Scope scope = scope(ctx, caller);
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      JsonObject candidate = f.object(body, "policy", "policy");
      Object given = body.getValue("samples");
      JsonArray samples = given instanceof JsonArray a ? a : null;
      // absent: the samples the ingress nodes reported recently (GET /waf/samples)
      if (body.containsKey("samples") && samples == null) f.error("samples", "must be a list of sample requests (at most " + WafPolicyService.MAX_SAMPLES + ")");
      for (String k : body.fieldNames()) if (!k.equals("policy") && !k.equals("samples")) f.error(k, "is not a field of a preview (policy, samples)");
      f.check();
      return policies.preview(caller, scope, candidate.encode(), samples == null ? null : samples.encode()).map(answer -> {
        Responses.ok(ctx, answer);
        return null;
      });
    });
  }

  private static Void respond(RoutingContext ctx, JsonObject body) {
    ctx.response().putHeader("ETag", "\"" + body.getLong("version") + "\"");
    Responses.ok(ctx, body);
    return null;
  }

  static WafPolicyService.Scope scope(RoutingContext ctx, Caller caller) {
    String[] te = Params.teamAndEnvironment(ctx, caller);
    return new WafPolicyService.Scope(te[0], te[1]);
  }

  private static long version(RoutingContext ctx) {
    return Params.versionPath(ctx, "traffic policy");
  }
}
