package io.meshplane.policy;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;
import static io.vertx.core.http.HttpMethod.PUT;

import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Params;
import io.meshplane.http.Responses;
import io.meshplane.node.NodeFormats;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code /acl} under an API (API.md §10): the policy, its versions, restore and preview. Parsing here, rules in {@link PolicyService}. */
final class PolicyRoutes {
  /** Which policy: {@code ?team=&environment=} ({@link #scope}). */
  private static final Query SCOPE = Query.of("team", "environment");

  private PolicyRoutes() {}

  static void mount(Api api, PolicyService policies, Cursors cursors) {
    // a node's peers and inbound rules as its agent holds them: the dashboard's node page
    api.route(GET, "/nodes/{id}/peers", Permission.NODES_READ, "node.read", "node", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!io.meshplane.common.Ids.wellFormed(id)) return io.vertx.core.Future.failedFuture(Refusal.notFound("no node " + id));
      return policies.peers(caller, id).map(encoded -> {
        Responses.ok(ctx, encoded);
        return null;
      });
    });
    api.route(GET, "/acl", Permission.ACL_READ, "acl.read", null, SCOPE, (ctx, caller) ->
        policies.get(caller, scope(ctx, caller)).map(body -> respond(ctx, body)));
    api.route(PUT, "/acl", Permission.ACL_WRITE, "acl.update", "acl", SCOPE, (ctx, caller) -> {
      PolicyService.Scope scope = scope(ctx, caller);
      Long ifMatch = ifMatch(ctx);
      return policies.put(caller, Api.request(ctx), scope, JsonBodies.required(ctx), ifMatch).map(body -> respond(ctx, body));
    });
    api.route(GET, "/acl/versions", Permission.ACL_READ, "acl.read", null, Query.paged("team", "environment"), (ctx, caller) -> {
      PolicyService.Scope scope = scope(ctx, caller);
      Page page = Pages.from(ctx, cursors, "acl-versions:" + scope.team() + "/" + scope.environment());
      return policies.versions(caller, scope, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
    api.route(GET, "/acl/versions/{version}", Permission.ACL_READ, "acl.read", null, SCOPE, (ctx, caller) ->
        policies.version(caller, scope(ctx, caller), version(ctx)).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(POST, "/acl/versions/{version}/restore", Permission.ACL_WRITE, "acl.rollback", "acl", SCOPE, (ctx, caller) -> {
      PolicyService.Scope scope = scope(ctx, caller);
      long from = version(ctx);
      Long ifMatch = ifMatch(ctx);
      return policies.restore(caller, Api.request(ctx), scope, from, ifMatch).map(body -> respond(ctx, body));
    });
    api.route(POST, "/acl/preview", Permission.ACL_READ, "acl.preview", null, SCOPE, (ctx, caller) -> {
      PolicyService.Scope scope = scope(ctx, caller);
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      JsonObject candidate = f.object(body, "policy", "/policy");
      String node = f.optionalString(body, "node", "/node");
      String src = f.optionalString(body, "src", "/src");
      String dst = f.optionalString(body, "dst", "/dst");
      String port = f.optionalString(body, "port", "/port");
      PolicyDocument.Probe probe = null;
      if (node == null) {
        if (src == null || dst == null || port == null) {
          f.error("/node", "give a node, or src, dst and port");
        } else if (!NodeFormats.name(src) && !NodeFormats.tag(src)) {
          f.error("/src", "must be a node name or tag:<slug>");
        } else if (!NodeFormats.name(dst) && !NodeFormats.tag(dst)) {
          f.error("/dst", "must be a node name or tag:<slug>");
        } else if ((probe = PolicyDocument.probe(dst + ":" + port)) == null) {
          f.error("/port", "must be tcp/<port>, udp/<port> or icmp");
        }
      } else if (src != null || dst != null) {
        f.error("/node", "give a node, or src, dst and port, not both");
      }
      f.check();
      // the candidate is validated (its errors named under /policy) and evaluated on the preview pool
      return policies.preview(caller, scope, candidate, node, src, dst, probe == null ? null : probe.proto(), probe == null ? 0 : probe.port())
          .map(encoded -> {
            Responses.ok(ctx, encoded);
            return null;
          });
    });
    mountImpact(api, policies);
  }

  /** {@code POST /acl/impact}: {@code {policy}}; the candidate's fleet-wide effect ({@link PolicyService#impact}). */
  private static void mountImpact(Api api, PolicyService policies) {
    api.route(POST, "/acl/impact", Permission.ACL_READ, "acl.impact", null, SCOPE, (ctx, caller) -> {
      PolicyService.Scope scope = scope(ctx, caller);
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      JsonObject candidate = f.object(body, "policy", "/policy");
      for (String k : body.fieldNames()) if (!k.equals("policy")) f.error("/" + k, "is not a field of an impact request (only policy)");
      f.check();
      return policies.impact(caller, scope, candidate).map(encoded -> {
        Responses.ok(ctx, encoded);
        return null;
      });
    });
  }

  private static Void respond(RoutingContext ctx, JsonObject body) {
    ctx.response().putHeader("ETag", "\"" + body.getLong("version") + "\"");
    Responses.ok(ctx, body);
    return null;
  }

  /** The policy's team and environment: {@code ?team=&environment=}, or the caller's own where it is a single value. */
  static PolicyService.Scope scope(RoutingContext ctx, Caller caller) {
    String[] te = Params.teamAndEnvironment(ctx, caller);
    return new PolicyService.Scope(te[0], te[1]);
  }

  /** {@code If-Match}: see {@link Params#ifMatchVersion}. */
  private static Long ifMatch(RoutingContext ctx) {
    return Params.ifMatchVersion(ctx, "the policy version");
  }

  private static long version(RoutingContext ctx) {
    return Params.versionPath(ctx, "policy");
  }

}
