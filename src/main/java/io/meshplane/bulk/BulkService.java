package io.meshplane.bulk;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.node.NodeActions;
import io.meshplane.node.NodeFilter;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One action on many nodes (API.md §8, {@code POST /nodes/bulk}). Each node goes through the service
 * method its single-node route calls ({@link NodeActions#retag}, {@link NodeActions#delete},
 * {@link Rekey#rekey}), so the scope rule, the audit event per node, the change-log entry and the
 * refusals (404 outside the scope, 409 with a re-key open) are the single route's; the bulk itself is
 * audited once ({@code node.bulk}).
 *
 * <p>Budget: at most {@value #MAX_NODES} nodes per request (ids, or a filter matching at most that
 * many); per-node actions in flight limited per replica across every bulk ({@link NodeSlots}, 4 by
 * default: a quarter of the main pool); a time budget for the whole request (60 s by default,
 * counted from its start), after which the nodes not yet started are answered {@code failed} (not
 * attempted); one bulk per caller and {@value #MAX_RUNNING} per replica at a time (429 / 503
 * otherwise). The per-node calls are asynchronous (PostgreSQL and the change log): nothing waits on
 * the event loop, and the loop does a few microseconds of bookkeeping per node.
 */
final class BulkService {
  private static final Logger LOG = LoggerFactory.getLogger(BulkService.class);
  static final int MAX_NODES = 500;
  static final int MAX_RUNNING = 4;
  static final Duration BUDGET = Duration.ofSeconds(60);
  static final Set<String> ACTIONS = Set.of("retag", "rekey", "delete");

  /** The operations feature's re-key, as its route calls it. */
  interface Rekey {
    Future<JsonObject> rekey(Caller caller, RequestInfo request, String nodeId);
  }

  /** A validated request: {@code ids} or {@code filter} (exactly one is non-null). */
  record Request(String action, String[] tags, List<String> ids, NodeFilter filter, boolean dryRun) {}

  /** One node's result: {@code failure} null when the outcome is ok; {@code status} the single route's HTTP status then. */
  record Result(String id, String name, String outcome, int status, Refusal failure, String detail, String operationId) {}

  private final SqlClient pool;
  private final AuditLog audit;
  private final NodeActions nodes;
  private final Rekey rekey;
  private final NodeSlots slots;
  private final Duration budget;
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  private final AtomicInteger bulks = new AtomicInteger();

  /**
   * @param slots the replica's limit on per-node actions in flight, shared by every bulk
   * @param budget how long one bulk request may take ({@link #BUDGET} in production; tests shorten it)
   */
  BulkService(SqlClient pool, AuditLog audit, NodeActions nodes, Rekey rekey, NodeSlots slots, Duration budget) {
    this.pool = pool;
    this.audit = audit;
    this.nodes = nodes;
    this.rekey = rekey;
    this.slots = slots;
    this.budget = budget;
  }

  NodeSlots slots() {
    return slots;
  }

  /** Bulk requests running on this replica now. */
  int running() {
    return bulks.get();
  }

  /**
   * Runs one bulk; the filter's resolution is built off the event loop through {@code offload}.
   * The caller's and the replica's counters always come back down, whatever fails and however.
   */
  Future<List<Result>> run(Caller caller, RequestInfo request, Request req, Page.Offload offload) {
    if (!running.add(caller.id())) {
      return Future.failedFuture(Refusal.rateLimited("you have a bulk action running already: wait for its answer", 2));
    }
    if (bulks.incrementAndGet() > MAX_RUNNING) {
      bulks.decrementAndGet();
      running.remove(caller.id());
      return Future.failedFuture(Refusal.unavailable("busy", "this replica is running " + MAX_RUNNING + " bulk actions already; retry shortly", 2));
    }
    Future<List<Result>> out;
    try {
      long deadline = System.nanoTime() + budget.toNanos();
      out = targets(caller, req, offload)
          .compose(targets -> audited(caller, request, req, targets.size()).map(v -> targets))
          .compose(targets -> each(caller, request, req, targets, deadline));
    } catch (RuntimeException | Error e) {
      // thrown before the chain could start: answered as a failure, and the counters below still run
      out = Future.failedFuture(e);
    }
    return out.andThen(ar -> {
      bulks.decrementAndGet();
      running.remove(caller.id());
    });
  }

  /** {@code {id, name}} of the nodes to act on: the ids as given (name unknown yet), or what the filter selects (409 past the cap). */
  private Future<List<JsonObject>> targets(Caller caller, Request req, Page.Offload offload) {
    if (req.ids() != null) {
      List<JsonObject> out = new ArrayList<>();
      for (String id : req.ids()) out.add(new JsonObject().put("id", id).putNull("name"));
      return Future.succeededFuture(out);
    }
    return nodes.matching(caller, req.filter(), MAX_NODES, offload).compose(found -> found.size() > MAX_NODES
        ? Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "too_many", "filter: matches more than " + MAX_NODES
            + " nodes; a bulk action takes at most " + MAX_NODES + ": narrow the filter or send ids",
            List.of(new Refusal.FieldError("filter", "matches more than " + MAX_NODES + " nodes"))))
        : Future.succeededFuture(found));
  }

  /** The bulk's own audit event, in the caller's boundary: what, on how many nodes, whether a dry run (each node has its own). */
  private Future<Void> audited(Caller caller, RequestInfo request, Request req, int count) {
    JsonObject details = new JsonObject().put("action", req.action()).put("nodes", count).put("dry_run", req.dryRun())
        .put("by", req.ids() != null ? "ids" : "filter");
    return audit.record(pool, AuditEvent.of(Actor.of(caller), request, "node.bulk", null, null, AuditEvent.SUCCESS, caller.team(),
        caller.environment()).with(details));
  }

  /**
   * Every target, each taking one of the replica's {@link NodeSlots} for its action: this bulk starts
   * at most the slots' limit at once and the slots are shared with every other bulk, so the main
   * pool sees at most that many bulk transactions whatever runs. Past {@code deadline} (checked
   * before and after waiting for a slot) a node is not attempted.
   */
  private Future<List<Result>> each(Caller caller, RequestInfo request, Request req, List<JsonObject> targets, long deadline) {
    Result[] results = new Result[targets.size()];
    if (targets.isEmpty()) return Future.succeededFuture(List.of());
    AtomicInteger next = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    Promise<List<Result>> all = Promise.promise();
    Runnable[] pump = new Runnable[1];
    pump[0] = () -> {
      int i = next.getAndIncrement();
      if (i >= targets.size()) return;
      JsonObject t = targets.get(i);
      Runnable finish = () -> {
        if (done.incrementAndGet() == targets.size()) all.complete(List.of(results));
        else pump[0].run();
      };
      if (System.nanoTime() - deadline >= 0) {
        results[i] = notReached(t);
        finish.run();
        return;
      }
      slots.acquire().onComplete(granted -> {
        Future<Result> one;
        if (System.nanoTime() - deadline >= 0) {
          one = Future.succeededFuture(notReached(t));
        } else {
          try {
            one = one(caller, request, req, t.getString("id"), t.getString("name"));
          } catch (RuntimeException e) {
            one = Future.failedFuture(e);
          }
        }
        one.onComplete(ar -> {
          slots.release();
          results[i] = ar.succeeded() ? ar.result() : failed(t, ar.cause(), req, request);
          finish.run();
        });
      });
    };
    for (int k = 0; k < Math.min(slots.limit(), targets.size()); k++) pump[0].run();
    return all.future();
  }

  private Result notReached(JsonObject t) {
    return new Result(t.getString("id"), t.getString("name"), "failed", 0, null,
        "not attempted: the bulk's time budget of " + seconds(budget) + " ran out before this node was reached", null);
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
  }

  private Future<Result> one(Caller caller, RequestInfo request, Request req, String id, String name) {
    if (req.dryRun()) {
      // what the action would find: the node inside the caller's scope (a re-key may still meet an open one)
      return nodes.get(caller, id).map(n -> new Result(id, n.getString("name"), "ok", 200, null, "dry run: would " + req.action(), null));
    }
    return switch (req.action()) {
      case "retag" -> nodes.retag(caller, request, id, req.tags())
          .map(n -> new Result(id, n.getString("name"), "ok", 200, null, "tags: " + String.join(", ", req.tags()), null));
      case "rekey" -> nodes.get(caller, id).compose(n -> rekey.rekey(caller, request, id)
          .map(op -> new Result(id, n.getString("name"), "ok", 202, null, "re-key requested", op.getString("id"))));
      default -> nodes.get(caller, id).compose(n -> nodes.delete(caller, request, id)
          .map(v -> new Result(id, n.getString("name"), "ok", 204, null, "deleted", null)));
    };
  }

  /**
   * A refusal is the single route's answer (its message is meant for the caller); anything else is
   * logged with the request id and answered with that id only: a database's text (constraint and
   * table names) never reaches the client.
   */
  private static Result failed(JsonObject t, Throwable cause, Request req, RequestInfo request) {
    String id = t.getString("id");
    String name = t.getString("name");
    if (cause instanceof Refusal r) {
      return new Result(id, name, r.kind() == Refusal.Kind.NOT_FOUND ? "not_found" : "refused", 0, r, r.getMessage(), null);
    }
    String requestId = request == null || request.requestId() == null ? "none" : request.requestId();
    LOG.warn("bulk {} on node {} failed unexpectedly (request id {})", req.action(), id, requestId, cause);
    return new Result(id, name, "failed", 0, null, "internal error; request id " + requestId, null);
  }
}
