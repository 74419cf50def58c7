package io.meshplane.node;

import io.meshplane.access.Boundary;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The inventory list (API.md §8): filters, orders, keyset pages and the total. Every statement runs
 * on the read pool under {@code postgres.read_timeout}; pages are built off the event loop (the page's
 * offload). Costs at 100,000 nodes are in load-tests/RESULTS.md ("Inventory at 100,000 nodes").
 */
final class NodeInventory {
  /** Drifting nodes the filter resolves at most (the claims are few: each is an incident). */
  static final int DRIFT_CAP = 10_000;
  /** Rows a {@code policy_sync=current|behind} page examines at most (the state is in memory, not in a column). */
  static final int SYNC_SCAN = 1_000;

  private final NodeRepository nodes;
  private final LiveNodes live;
  private final NodePolicy policy;
  private final NodeService records;

  NodeInventory(NodeRepository nodes, LiveNodes live, NodePolicy policy, NodeService records) {
    this.nodes = nodes;
    this.live = live;
    this.policy = policy;
    this.records = records;
  }

  /** The caller's boundary narrowed to the team and environment filters; null when they lie outside it (nothing matches). */
  static Boundary narrow(Boundary caller, NodeFilter f) {
    String team = part(caller.team(), f.team());
    String env = part(caller.environment(), f.environment());
    return team == null || env == null ? null : new Boundary(team, env);
  }

  private static String part(String callers, String asked) {
    if (asked == null) return callers;
    return Boundary.ALL.equals(callers) || callers.equals(asked) ? asked : null;
  }

  /** The listing of {@code f} inside {@code caller}, or null when nothing can match; fails 409 past the drift cap. */
  NodeListing listing(Boundary caller, NodeFilter f, long now) {
    Boundary scope = narrow(caller, f);
    if (scope == null) return null;
    String[] ids = null;
    if ("drifting".equals(f.policySync())) {
      List<String> claimed = policy.drifting(DRIFT_CAP + 1);
      if (claimed.size() > DRIFT_CAP) {
        throw new Refusal(Refusal.Kind.CONFLICT, "too_many", "policy_sync: more than " + DRIFT_CAP + " nodes are drifting; "
            + "the filter resolves at most " + DRIFT_CAP, List.of(new Refusal.FieldError("policy_sync", "more than " + DRIFT_CAP
            + " nodes are drifting")));
      }
      if (claimed.isEmpty()) return null;
      ids = claimed.toArray(new String[0]);
    }
    return new NodeListing(scope, f, Instant.ofEpochMilli(live.staleCutoff(now)), ids);
  }

  /**
   * {@link #listing(Boundary, NodeFilter, long)} where its cost lies: {@code policy_sync=drifting} copies
   * up to {@link #DRIFT_CAP} + 1 claimed ids, so it runs through {@code offload} (off the event loop);
   * the other filters build a few objects, inline.
   */
  Future<NodeListing> listing(Boundary caller, NodeFilter f, long now, Page.Offload offload) {
    if ("drifting".equals(f.policySync())) return offload.run(() -> listing(caller, f, now));
    try {
      return Future.succeededFuture(listing(caller, f, now));
    } catch (Refusal r) {
      return Future.failedFuture(r);
    }
  }

  Future<Buffer> list(Boundary caller, NodeFilter f, NodeSort sort, Page page) {
    long now = System.currentTimeMillis();
    return listing(caller, f, now, page.offload()).compose(listing -> {
      if (listing == null) {
        return Future.succeededFuture(new JsonObject().put("items", new JsonArray()).put("next_cursor", null).put("total", 0)
            .put("total_estimated", false).toBuffer());
      }
      if ("current".equals(f.policySync()) || "behind".equals(f.policySync())) return scan(listing, f.policySync(), sort, page, now);
      Future<List<NodeRecord>> rows = nodes.list(listing, sort, page.after(), page.fetch());
      Future<long[]> total = nodes.count(listing);
      return Future.all(rows, total).compose(both -> withLive(rows.result()).compose(liveById -> page.offload().run(() -> page
          .respond(rows.result(), r -> records.toJson(r, liveById.get(r.id()), now), r -> key(sort, r))
          .put("total", total.result()[0]).put("total_estimated", total.result()[1] == 1).toBuffer())));
    });
  }

  /**
   * {@code policy_sync=current|behind}: the state comes from the live acknowledgments against this
   * replica's model, which no index holds, so a page examines at most {@link #SYNC_SCAN} rows in the
   * order asked and keeps those in the state. A page may hold fewer items than {@code limit} (even
   * none) with a {@code next_cursor}: the scan goes on from there. No total ({@code null}).
   */
  private Future<Buffer> scan(NodeListing listing, String state, NodeSort sort, Page page, long now) {
    return nodes.list(listing, sort, page.after(), SYNC_SCAN).compose(rows -> withLive(rows).compose(liveById -> page.offload().run(() -> {
      List<JsonObject> kept = new ArrayList<>();
      List<NodeRecord> keptRows = new ArrayList<>();
      for (NodeRecord r : rows) {
        JsonObject node = records.toJson(r, liveById.get(r.id()), now);
        if (!state.equals(node.getJsonObject("policy_sync").getString("state"))) continue;
        kept.add(node);
        keptRows.add(r);
        if (kept.size() > page.limit()) break;
      }
      JsonArray items = new JsonArray();
      for (int i = 0; i < Math.min(kept.size(), page.limit()); i++) items.add(kept.get(i));
      String next = null;
      if (kept.size() > page.limit()) next = page.cursors().encode(page.list(), key(sort, keptRows.get(page.limit() - 1)));
      else if (rows.size() == SYNC_SCAN) next = page.cursors().encode(page.list(), key(sort, rows.get(rows.size() - 1)));
      return new JsonObject().put("items", items).put("next_cursor", next).put("total", null).put("total_estimated", false).toBuffer();
    })));
  }

  /**
   * Ids of the nodes inside {@code caller} that {@code f} selects, in id order, at most {@code max} + 1
   * (the bulk's cap check). As the list: the drift claims' copy and the records' JSON (up to
   * {@link #SYNC_SCAN} of them for {@code current|behind}) run through {@code offload}.
   */
  Future<List<NodeRecord>> matching(Boundary caller, NodeFilter f, int max, Page.Offload offload) {
    long now = System.currentTimeMillis();
    return listing(caller, f, now, offload).compose(listing -> {
      if (listing == null) return Future.succeededFuture(List.<NodeRecord>of());
      if (!"current".equals(f.policySync()) && !"behind".equals(f.policySync())) return nodes.list(listing, NodeSort.ID, null, max + 1);
      // the state is in memory: bounded like a page of the list (a filter matching more than the cap is refused anyway)
      return nodes.list(listing, NodeSort.ID, null, SYNC_SCAN).compose(rows -> {
        if (rows.size() == SYNC_SCAN) {
          return Future.failedFuture(Refusal.invalid("filter.policy_sync", "current and behind select among at most " + SYNC_SCAN
              + " nodes in a bulk request: narrow the filter (team, environment, tag, name_prefix, address)"));
        }
        return withLive(rows).compose(liveById -> offload.run(() -> {
          List<NodeRecord> out = new ArrayList<>();
          for (NodeRecord r : rows) {
            if (f.policySync().equals(records.toJson(r, liveById.get(r.id()), now).getJsonObject("policy_sync").getString("state"))) out.add(r);
          }
          return out;
        }));
      });
    });
  }

  private Future<Map<String, LiveNodes.Live>> withLive(List<NodeRecord> rows) {
    Set<String> ids = new LinkedHashSet<>();
    for (NodeRecord r : rows) ids.add(r.id());
    return live.getAll(ids);
  }

  /** The cursor's key of a row in {@code sort} order: the sort key, then the id. */
  static List<String> key(NodeSort sort, NodeRecord r) {
    return switch (sort) {
      case ID -> List.of(r.id());
      case NAME, NAME_DESC -> List.of(r.name(), r.id());
      default -> List.of(r.heartbeatAt() == null ? "-infinity" : r.heartbeatAt().toString(), r.id());
    };
  }
}
