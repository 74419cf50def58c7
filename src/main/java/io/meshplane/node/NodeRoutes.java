package io.meshplane.node;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;
import static io.vertx.core.http.HttpMethod.PUT;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Params;
import io.meshplane.http.Responses;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** {@code /nodes} under an API: enrollment, inventory, deprovisioning (API.md §8). Parsing here, rules in {@link NodeService}. */
final class NodeRoutes {

  private NodeRoutes() {}

  public static void mount(Api api, NodeService nodes, Cursors cursors) {
    api.route(POST, "/nodes", Permission.NODES_ENROLL, "node.enroll", null, (ctx, caller) ->
        nodes.enroll(caller, Api.request(ctx), parseEnroll(JsonBodies.required(ctx), caller)).map(body -> {
          ctx.response().putHeader("Location", api.location("/nodes/" + body.getJsonObject("node").getString("id")));
          Responses.json(ctx, 201, body);
          return null;
        }));
    api.route(GET, "/nodes", Permission.NODES_READ, "node.list", null,
        Query.paged("status", "tag", "name_prefix", "agent_version", "team", "environment", "address", "policy_sync", "sort"),
        (ctx, caller) -> {
      NodeFilter filter = parseQuery(ctx);
      NodeSort sort = parseSort(ctx);
      // a cursor belongs to its order: one of another order is refused (400 cursor)
      Page page = Pages.from(ctx, cursors, sort == NodeSort.ID ? "nodes" : "nodes:" + sort.wire);
      return nodes.list(caller, filter, sort, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
    api.route(GET, "/nodes/{id}", Permission.NODES_READ, "node.read", "node", (ctx, caller) ->
        nodes.get(caller, Params.pathId(ctx, "nd", "node")).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(PUT, "/nodes/{id}/tags", Permission.NODES_OPERATE, "node.retag", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      Fields f = new Fields();
      JsonObject body = JsonBodies.required(ctx);
      if (body.getValue("tags") == null) f.error("tags", "is required");
      String[] tags = tags(f, body);
      f.check();
      return nodes.retag(caller, Api.request(ctx), id, tags).map(node -> {
        Responses.ok(ctx, node);
        return null;
      });
    });
    api.route(GET, "/relays", Permission.NODES_READ, "relay.list", null, (ctx, caller) ->
        nodes.relays(caller).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(DELETE, "/nodes/{id}", Permission.NODES_OPERATE, "node.delete", "node", (ctx, caller) ->
        nodes.delete(caller, Api.request(ctx), Params.pathId(ctx, "nd", "node")).map(v -> {
          Responses.noContent(ctx);
          return null;
        }));
  }

  static NodeService.EnrollRequest parseEnroll(JsonObject body, Caller caller) {
    Fields f = new Fields();
    String name = f.string(body, "name", "name");
    if (name != null && !NodeFormats.name(name)) f.error("name", "must be a DNS label: a-z, 0-9 and '-', at most 63");
    String key = f.string(body, "public_key", "public_key");
    if (key != null && !NodeFormats.publicKey(key)) f.error("public_key", "must be the base64 of 32 bytes");
    String[] tags = tags(f, body);
    String team = boundaryPart(f, body, "team", caller.team());
    String env = boundaryPart(f, body, "environment", caller.environment());
    String region = f.optionalString(body, "region", "region");
    if (region != null && !Fields.isSlug(region)) f.error("region", "must be a region slug");
    f.check();
    return new NodeService.EnrollRequest(name, key, tags, new Boundary(team, env), region);
  }

  private static String[] tags(Fields f, JsonObject body) {
    return NodeFormats.tags(f, body.getValue("tags"), "tags");
  }

  /** Team or environment of a new node: the request's, or the caller's own when that is a single value. */
  private static String boundaryPart(Fields f, JsonObject body, String key, String callers) {
    String v = f.optionalString(body, key, key);
    if (v == null) {
      if (Boundary.ALL.equals(callers)) f.error(key, "is required when your token covers every " + key);
      return callers;
    }
    if (!Fields.isSlug(v)) f.error(key, "must be lower-case letters, digits and '-'");
    return v;
  }

  static NodeFilter parseQuery(RoutingContext ctx) {
    Fields f = new Fields();
    NodeFilter filter = NodeFilter.parse(ctx.request()::getParam, f, "");
    f.check();
    return filter;
  }

  /** {@code sort}: name, -name, heartbeat, -heartbeat, status, -status; id order when absent. */
  static NodeSort parseSort(RoutingContext ctx) {
    String s = ctx.request().getParam("sort");
    if (s == null) return NodeSort.ID;
    NodeSort sort = NodeSort.of(s);
    if (sort == null) throw Refusal.invalid("sort", "must be one of id, name, -name, heartbeat, -heartbeat, status, -status");
    return sort;
  }
}
