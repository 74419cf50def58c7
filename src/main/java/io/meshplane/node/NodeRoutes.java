package io.meshplane.node;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.auth.Permission;
import io.meshplane.auth.SecuredRoutes;
import io.meshplane.common.Refusal;
import io.meshplane.http.Cursors;
import io.meshplane.common.Ids;
import io.meshplane.http.Page;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Responses;
import io.vertx.ext.web.RoutingContext;

/** {@code /v1/nodes}: enrollment, inventory, deprovisioning (SPEC §4). */
public final class NodeRoutes {
  private NodeRoutes() {}

  public static void mount(SecuredRoutes api, NodeService nodes, Cursors cursors) {
    api.route(POST, "/v1/nodes", Permission.NODES_ENROLL, "node.enroll", null, (ctx, caller) ->
        nodes.enroll(ctx, caller, JsonBodies.required(ctx)).map(body -> {
          ctx.response().putHeader("Location", "/v1/nodes/" + body.getJsonObject("node").getString("id"));
          Responses.json(ctx, 201, body);
          return null;
        }));
    api.route(GET, "/v1/nodes", Permission.NODES_READ, "node.list", null, (ctx, caller) ->
        nodes.list(ctx, caller, Page.from(ctx, cursors, "nodes")).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(GET, "/v1/nodes/{id}", Permission.NODES_READ, "node.read", "node", (ctx, caller) ->
        nodes.get(caller, nodeId(ctx)).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(DELETE, "/v1/nodes/{id}", Permission.NODES_OPERATE, "node.delete", "node", (ctx, caller) ->
        nodes.delete(ctx, caller, nodeId(ctx)).map(v -> {
          Responses.noContent(ctx);
          return null;
        }));
  }

  /** A node id from the path; one that cannot be an id is simply not found. */
  public static String nodeId(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (!Ids.looksLike("nd", id)) throw Refusal.notFound("no node " + id);
    return id;
  }
}
