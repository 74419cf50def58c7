package io.meshplane.bulk;

import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Permission;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.node.NodeFilter;
import io.meshplane.node.NodeFormats;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Problems;
import io.meshplane.http.Responses;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** {@code POST /nodes/bulk} under an API (API.md §8): parsing here, the work in {@link BulkService}. */
final class BulkRoutes {
  private static final Set<String> KEYS = Set.of("action", "tags", "ids", "filter", "dry_run");

  private BulkRoutes() {}

  static void mount(Api api, BulkService bulk) {
    // the strictest permission any of the actions needs: every one of them is nodes:operate
    api.route(POST, "/nodes/bulk", Permission.NODES_OPERATE, "node.bulk", null, (ctx, caller) -> {
      BulkService.Request req = parse(JsonBodies.required(ctx));
      return bulk.run(caller, Api.request(ctx), req, Pages.worker(ctx.vertx())).map(results -> {
        Responses.ok(ctx, answer(req, results));
        return null;
      });
    });
  }

  static BulkService.Request parse(JsonObject body) {
    Fields f = new Fields();
    for (String k : body.fieldNames()) if (!KEYS.contains(k)) f.error(k, "is not a field of a bulk request (action, tags, ids, filter, dry_run)");
    String action = f.string(body, "action", "action");
    if (action != null && !BulkService.ACTIONS.contains(action)) f.error("action", "must be retag, rekey or delete");
    String[] tags = new String[0];
    if ("retag".equals(action)) {
      if (body.getValue("tags") == null) f.error("tags", "is required to retag");
      tags = NodeFormats.tags(f, body.getValue("tags"), "tags");
    } else if (body.getValue("tags") != null) {
      f.error("tags", "is for retag only");
    }
    Object dry = body.getValue("dry_run");
    if (dry != null && !(dry instanceof Boolean)) f.error("dry_run", "must be true or false");
    Object ids = body.getValue("ids");
    Object filter = body.getValue("filter");
    List<String> idList = null;
    NodeFilter nodeFilter = null;
    if ((ids == null) == (filter == null)) {
      f.error(ids == null ? "ids" : "filter", ids == null ? "give ids or a filter" : "give ids or a filter, not both");
    } else if (ids != null) {
      idList = ids(f, ids);
    } else if (!(filter instanceof JsonObject fo) || fo.isEmpty()) {
      f.error("filter", "must be an object with at least one filter (" + String.join(", ", new java.util.TreeSet<>(NodeFilter.NAMES)) + ")");
    } else {
      for (String k : fo.fieldNames()) {
        if (!NodeFilter.NAMES.contains(k)) f.error("filter." + k, "is not a filter of the inventory");
        else if (!(fo.getValue(k) instanceof String)) f.error("filter." + k, "must be a string");
      }
      if (f.ok()) nodeFilter = NodeFilter.parse(fo::getString, f, "filter.");
    }
    f.check();
    return new BulkService.Request(action, tags, idList, nodeFilter, Boolean.TRUE.equals(dry));
  }

  private static List<String> ids(Fields f, Object v) {
    if (!(v instanceof JsonArray a) || a.isEmpty() || a.size() > BulkService.MAX_NODES) {
      f.error("ids", "must be an array of 1 to " + BulkService.MAX_NODES + " node ids");
      return null;
    }
    List<String> out = new ArrayList<>(a.size());
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < a.size(); i++) {
      Object o = a.getValue(i);
      if (!(o instanceof String s) || !Ids.looksLike("nd", s)) {
        f.error("ids[" + i + "]", "must be a node id (nd_...)");
        return null;
      }
      if (!seen.add(s)) {
        f.error("ids[" + i + "]", "appears twice");
        return null;
      }
      out.add(s);
    }
    return out;
  }

  private static JsonObject answer(BulkService.Request req, List<BulkService.Result> results) {
    JsonArray items = new JsonArray();
    int ok = 0;
    for (BulkService.Result r : results) {
      if ("ok".equals(r.outcome())) ok++;
      JsonObject o = new JsonObject().put("id", r.id()).put("name", r.name()).put("outcome", r.outcome())
          .put("status", r.failure() != null ? Problems.status(r.failure().kind()) : r.status() == 0 ? null : r.status())
          .put("detail", r.detail());
      if (r.failure() != null) o.put("code", r.failure().code());
      if (r.operationId() != null) o.put("operation_id", r.operationId());
      items.add(o);
    }
    return new JsonObject().put("action", req.action()).put("dry_run", req.dryRun()).put("total", results.size()).put("ok", ok)
        .put("results", items);
  }
}
