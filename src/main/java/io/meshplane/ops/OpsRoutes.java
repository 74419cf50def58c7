package io.meshplane.ops;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;
import static io.vertx.core.http.HttpMethod.PUT;

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
import io.meshplane.node.NodeFormats;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Services, ingress and operations under an API (API.md §9). Parsing here, rules in {@link OpsService}.
 * Unknown body fields are ignored (API.md §1); a body on re-key and drain, when sent, must still be a
 * JSON object (a drain's may carry {@code grace_s}).
 */
final class OpsRoutes {
  /** The fleet-wide list's default page size (API.md §9); at most {@link Page#MAX_LIMIT} like every list. */
  static final int LIST_LIMIT = 50;
  /** What {@code status=open} stands for: the operations not completed yet. */
  private static final Set<String> OPEN = Set.of("pending", "delivered");

  private OpsRoutes() {}

  static void mount(Api api, OpsService ops, Cursors cursors) {
    api.route(PUT, "/nodes/{id}/services", Permission.NODES_SERVICES, "node.services", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      String[] services = parseServices(JsonBodies.required(ctx));
      return ops.services(caller, Api.request(ctx), id, services).map(node -> {
        Responses.ok(ctx, node);
        return null;
      });
    });
    api.route(POST, "/nodes/{id}/ingress", Permission.NODES_OPERATE, "node.ingress", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      OpsService.Ingress in = parseIngress(JsonBodies.required(ctx));
      return ops.assignIngress(caller, Api.request(ctx), id, in).map(node -> {
        ctx.response().putHeader("Location", api.location("/nodes/" + id));
        Responses.json(ctx, 201, node);
        return null;
      });
    });
    api.route(POST, "/nodes/{id}/rekey", Permission.NODES_OPERATE, "node.rekey", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      return accepted(api, ctx, ops.rekey(caller, Api.request(ctx), id));
    });
    api.route(POST, "/nodes/{id}/certificate/reissue", Permission.NODES_OPERATE, "node.reissue_certificate", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      return accepted(api, ctx, ops.reissue(caller, Api.request(ctx), id));
    });
    api.route(PUT, "/nodes/{id}/relay", Permission.NODES_OPERATE, "node.move_relay", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      String relay = f.string(body, "relay", "relay");
      if (relay != null && !NodeFormats.name(relay)) f.error("relay", "must be a relay name");
      f.check();
      return accepted(api, ctx, ops.moveRelay(caller, Api.request(ctx), id, relay));
    });
    api.route(POST, "/nodes/{id}/ingress/{name}/drain", Permission.NODES_OPERATE, "node.drain_ingress", "node", (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      String name = ctx.pathParam("name");
      if (!NodeFormats.name(name)) throw Refusal.notFound("node " + id + " has no ingress named " + name);
      // optional grace_s: how long the agent lets in-flight requests finish (absent: the agent's default, 120 s)
      Object grace = JsonBodies.object(ctx).getValue("grace_s");
      if (grace != null && !(grace instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()) && n.longValue() >= 1 && n.longValue() <= 3600)) {
        throw Refusal.invalid("grace_s", "must be a whole number of seconds from 1 to 3600");
      }
      Integer graceS = grace == null ? null : ((Number) grace).intValue();
      return accepted(api, ctx, ops.drain(caller, Api.request(ctx), id, name, graceS));
    });
    api.route(GET, "/nodes/{id}/operations", Permission.NODES_READ, "operation.list", "node", Query.paged("status"), (ctx, caller) -> {
      String id = Params.pathId(ctx, "nd", "node");
      String status = ctx.request().getParam("status");
      if (status != null && !OpsService.STATUSES.contains(status)) {
        throw Refusal.invalid("status", "must be pending, delivered, succeeded, failed or expired");
      }
      Page page = Pages.from(ctx, cursors, "operations:" + id);
      return ops.ofNode(caller, id, status, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
    api.route(GET, "/operations", Permission.NODES_READ, "operation.list", null,
        Query.paged("kind", "status", "node_id", "since", "until"), (ctx, caller) -> {
          OpsQuery.Filter filter = parseFilter(ctx);
          Page page = Pages.from(ctx, cursors, "operations", LIST_LIMIT);
          return ops.list(caller, filter, page).map(body -> {
            Responses.ok(ctx, body);
            return null;
          });
        });
    api.route(GET, "/operations/{id}", Permission.NODES_READ, "operation.read", "operation", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      if (!Ids.looksLike("op", id)) throw Refusal.notFound("no operation " + id);
      return ops.get(caller, id).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
  }

  /**
   * The filters of {@code GET /operations}: comma-separated kinds and statuses ({@code open} = pending
   * and delivered), one node id, a half-open time range on requested_at. Every bad value is a 400
   * naming its parameter (a parameter given twice is refused before, by the request's checks).
   */
  static OpsQuery.Filter parseFilter(RoutingContext ctx) {
    Fields f = new Fields();
    Set<String> kinds = new TreeSet<>();
    for (String k : values(ctx, "kind")) {
      if (OpsService.KINDS.contains(k)) {
        kinds.add(k);
      } else {
        f.error("kind", "must be rekey, move_relay, drain_ingress or reissue_certificate, or several of them separated by commas");
        break;
      }
    }
    Set<String> statuses = new TreeSet<>();
    for (String s : values(ctx, "status")) {
      if (s.equals("open")) {
        statuses.addAll(OPEN);
      } else if (OpsService.STATUSES.contains(s)) {
        statuses.add(s);
      } else {
        f.error("status", "must be pending, delivered, succeeded, failed, expired or open, or several of them separated by commas");
        break;
      }
    }
    String node = ctx.request().getParam("node_id");
    if (node != null && !Ids.looksLike("nd", node)) f.error("node_id", "is not a node id");
    String sinceRaw = ctx.request().getParam("since");
    Instant since = sinceRaw == null ? null : f.parseTimestamp(sinceRaw, "since");
    String untilRaw = ctx.request().getParam("until");
    Instant until = untilRaw == null ? null : f.parseTimestamp(untilRaw, "until");
    if (since != null && until != null && !until.isAfter(since)) f.error("until", "must be later than since");
    f.check();
    return new OpsQuery.Filter(kinds, statuses, node, since, until);
  }

  /** A list parameter's comma-separated values (none when absent); an empty value is one empty item, refused. */
  private static List<String> values(RoutingContext ctx, String name) {
    String raw = ctx.request().getParam(name);
    return raw == null ? List.of() : Arrays.asList(raw.split(",", -1));
  }

  private static io.vertx.core.Future<Void> accepted(Api api, RoutingContext ctx, io.vertx.core.Future<JsonObject> op) {
    return op.map(body -> {
      ctx.response().putHeader("Location", api.location("/operations/" + body.getString("id")));
      Responses.json(ctx, 202, body);
      return null;
    });
  }

  static String[] parseServices(JsonObject body) {
    Fields f = new Fields();
    Object v = body.getValue("services");
    Set<String> out = new LinkedHashSet<>();
    if (v == null) {
      f.error("services", "is required");
    } else if (!(v instanceof JsonArray a) || a.size() > 64) {
      f.error("services", "must be an array of at most 64 services");
    } else {
      for (int i = 0; i < a.size(); i++) {
        Object s = a.getValue(i);
        if (!(s instanceof String str) || !NodeFormats.service(str)) {
          f.error("services[" + i + "]", "must be name:port (a slug, then 1-65535)");
        } else {
          out.add(str);
        }
      }
    }
    f.check();
    return out.toArray(new String[0]);
  }

  static OpsService.Ingress parseIngress(JsonObject body) {
    Fields f = new Fields();
    String name = f.string(body, "name", "name");
    if (name != null && !NodeFormats.name(name)) f.error("name", "must be a DNS label: a-z, 0-9 and '-', at most 63");
    String hostname = f.string(body, "hostname", "hostname");
    if (hostname != null && !NodeFormats.hostname(hostname)) f.error("hostname", "must be a DNS name such as web.example.net");
    Object p = body.getValue("port");
    int port = 0;
    if (p == null) {
      f.error("port", "is required");
    } else if (!(p instanceof Integer i) || i < 1 || i > 65535) {
      f.error("port", "must be a whole number 1-65535");
    } else {
      port = i;
    }
    f.check();
    return new OpsService.Ingress(name, hostname, port);
  }
}
