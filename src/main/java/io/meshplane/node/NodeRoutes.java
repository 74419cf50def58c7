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
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Pattern;

/** {@code /nodes} under an API: enrollment, inventory, deprovisioning (API.md §8). Parsing here, rules in {@link NodeService}. */
final class NodeRoutes {
  private static final Pattern NAME_PREFIX = Pattern.compile("^[a-z0-9-]{1,63}$");
  private static final Pattern AGENT_VERSION = Pattern.compile("[A-Za-z0-9.+_-]{1,64}");
  private static final Set<String> STATUSES = Set.of("pending", "online", "stale");

  private NodeRoutes() {}

  public static void mount(Api api, NodeService nodes, Cursors cursors) {
    api.route(POST, "/nodes", Permission.NODES_ENROLL, "node.enroll", null, (ctx, caller) ->
        nodes.enroll(caller, Api.request(ctx), parseEnroll(JsonBodies.required(ctx), caller)).map(body -> {
          ctx.response().putHeader("Location", api.location("/nodes/" + body.getJsonObject("node").getString("id")));
          Responses.json(ctx, 201, body);
          return null;
        }));
    api.route(GET, "/nodes", Permission.NODES_READ, "node.list", null,
        Query.paged("status", "tag", "name_prefix", "agent_version"), (ctx, caller) -> {
      Page page = Pages.from(ctx, cursors, "nodes");
      return nodes.list(caller, parseQuery(ctx), page).map(body -> {
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
    Object v = body.getValue("tags");
    if (v == null) return new String[0];
    if (!(v instanceof JsonArray a) || a.size() > 32) {
      f.error("tags", "must be an array of at most 32 tags");
      return new String[0];
    }
    Set<String> out = new LinkedHashSet<>();
    for (int i = 0; i < a.size(); i++) {
      Object t = a.getValue(i);
      if (!(t instanceof String s) || !NodeFormats.tag(s)) {
        f.error("tags[" + i + "]", "must be tag:<slug>");
        return new String[0];
      }
      out.add(s);
    }
    return out.toArray(new String[0]);
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

  static NodeService.Query parseQuery(RoutingContext ctx) {
    Fields f = new Fields();
    String status = ctx.request().getParam("status");
    if (status != null && !STATUSES.contains(status)) f.error("status", "must be pending, online or stale");
    String tag = ctx.request().getParam("tag");
    if (tag != null && !NodeFormats.tag(tag)) f.error("tag", "must be tag:<slug>");
    String prefix = ctx.request().getParam("name_prefix");
    if (prefix != null && !NAME_PREFIX.matcher(prefix).matches()) f.error("name_prefix", "must be 1-63 of a-z, 0-9, '-'");
    String agentVersion = ctx.request().getParam("agent_version");
    if (agentVersion != null && !AGENT_VERSION.matcher(agentVersion).matches()) {
      f.error("agent_version", "must be 1-64 of A-Z, a-z, 0-9, '.', '+', '_', '-'");
    }
    f.check();
    return new NodeService.Query(status, tag, prefix, agentVersion);
  }
}
