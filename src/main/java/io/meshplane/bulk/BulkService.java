package io.meshplane.bulk;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditLog;
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

/**
 * One action on many nodes (API.md §8, {@code POST /nodes/bulk}). Each node goes through the service
 * method its single-node route calls ({@link NodeActions#retag}, {@link NodeActions#delete},
 * {@link Rekey#rekey}), so the scope rule, the audit event per node, the change-log entry and the
 * refusals (404 outside the scope, 409 with a re-key open) are the single route's; the bulk itself is
 * audited once ({@code node.bulk}).
 *
 * <p>Budget: at most {@value #MAX_NODES} nodes per request (ids, or a filter matching at most that
 * many); {@value #CONCURRENCY} nodes in flight at once; {@link #BUDGET} for the whole request, after
 * which the nodes not started are answered {@code failed} (not attempted); one bulk per caller and
 * {@value #MAX_RUNNING} per replica at a time (429 / 503 otherwise). The per-node calls are
 * asynchronous (PostgreSQL and the change log): nothing waits on the event loop, and the loop does
 * a few microseconds of bookkeeping per node.
 */
final class BulkService {
  static final int MAX_NODES = 500;
  static final int CONCURRENCY = 8;
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
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  private final AtomicInteger inFlight = new AtomicInteger();

  BulkService(SqlClient pool, AuditLog audit, NodeActions nodes, Rekey rekey) {
    this.pool = pool;
    this.audit = audit;
    this.nodes = nodes;
    this.rekey = rekey;
  }

  Future<List<Result>> run(Caller caller, RequestInfo request, Request req) {
    if (!running.add(caller.id())) {
      return Future.failedFuture(Refusal.rateLimited("you have a bulk action running already: wait for its answer", 2));
    }
    if (inFlight.incrementAndGet() > MAX_RUNNING) {
      inFlight.decrementAndGet();
      running.remove(caller.id());
      return Future.failedFuture(Refusal.unavailable("busy", "this replica is running " + MAX_RUNNING + " bulk actions already; retry shortly", 2));
    }
    return targets(caller, req)
        .compose(targets -> audited(caller, request, req, targets.size()).map(v -> targets))
        .compose(targets -> each(caller, request, req, targets))
        .andThen(ar -> {
          inFlight.decrementAndGet();
          running.remove(caller.id());
        });
  }

  /** {@code {id, name}} of the nodes to act on: the ids as given (name unknown yet), or what the filter selects (409 past the cap). */
  private Future<List<JsonObject>> targets(Caller caller, Request req) {
    if (req.ids() != null) {
      List<JsonObject> out = new ArrayList<>();
      for (String id : req.ids()) out.add(new JsonObject().put("id", id).putNull("name"));
      return Future.succeededFuture(out);
    }
    return nodes.matching(caller, req.filter(), MAX_NODES).compose(found -> found.size() > MAX_NODES
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

  private Future<List<Result>> each(Caller caller, RequestInfo request, Request req, List<JsonObject> targets) {
    Result[] results = new Result[targets.size()];
    if (targets.isEmpty()) return Future.succeededFuture(List.of());
    long deadline = System.nanoTime() + BUDGET.toNanos();
    AtomicInteger next = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    Promise<List<Result>> all = Promise.promise();
    Runnable[] pump = new Runnable[1];
    pump[0] = () -> {
      int i = next.getAndIncrement();
      if (i >= targets.size()) return;
      JsonObject t = targets.get(i);
      Future<Result> one = System.nanoTime() > deadline
          ? Future.succeededFuture(new Result(t.getString("id"), t.getString("name"), "failed", 0, null,
              "not attempted: the bulk's budget of " + BUDGET.toSeconds() + " s ran out", null))
          : one(caller, request, req, t.getString("id"), t.getString("name"));
      one.onComplete(ar -> {
        results[i] = ar.succeeded() ? ar.result() : failed(t, ar.cause());
        if (done.incrementAndGet() == targets.size()) all.complete(List.of(results));
        else pump[0].run();
      });
    };
    for (int k = 0; k < Math.min(CONCURRENCY, targets.size()); k++) pump[0].run();
    return all.future();
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

  private static Result failed(JsonObject t, Throwable cause) {
    String id = t.getString("id");
    String name = t.getString("name");
    if (cause instanceof Refusal r) {
      return new Result(id, name, r.kind() == Refusal.Kind.NOT_FOUND ? "not_found" : "refused", 0, r, r.getMessage(), null);
    }
    return new Result(id, name, "failed", 0, null, "could not be done now: " + cause.getMessage(), null);
  }
}
