package io.meshplane.ops;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeReader;
import io.meshplane.node.Relays;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Node operations, ingress and services (API.md §9): what operators ask for (each a transaction under the
 * node row's lock: the change, its audit event, the node's new {@code work} in the change log), and
 * how an operation completes: from an agent's result checked against its heartbeat, or at its
 * deadline. Completions run in the background of the heartbeat that brought them: the answer never
 * waits for PostgreSQL, and an operation whose completion could not be written stays open, so its
 * command is sent again and the agent reports its result again (at-least-once, idempotent by id).
 */
final class OpsService {
  private static final Logger LOG = LoggerFactory.getLogger(OpsService.class);
  static final int MAX_INGRESS = 16;
  static final Set<String> STATUSES = Set.of("pending", "delivered", "succeeded", "failed", "expired");
  static final List<String> KINDS = List.of("rekey", "move_relay", "drain_ingress", "reissue_certificate");

  /** A validated ingress assignment. */
  record Ingress(String name, String hostname, int port) {}

  private final Pool pool;
  private final OpsRepository repo;
  private final AuditLog audit;
  private final ChangeLog.Feed feed;
  private final NodeReader nodes;
  private final Relays relays;
  private final Duration deadline;
  private final Counter ignoredResults;
  /** Counters by kind (requested) and by kind and status (completed), all registered at start. */
  private final Map<String, Counter> requested = new HashMap<>();
  private final Map<String, Counter> completed = new HashMap<>();
  /** Operations whose completion this replica is writing (one write in flight per operation). */
  private final Set<String> completing = ConcurrentHashMap.newKeySet();
  /** Operations this replica closed, by outcome, counted after the commit (the panel's series read them). */
  private final OperationOutcomes.Counts outcomes = new OperationOutcomes.Counts();
  /** Operations this replica has marked delivered (one mark per replica, not one per answer). */
  private final Cache<String, Boolean> delivered = Caffeine.newBuilder().maximumSize(200_000).expireAfterWrite(Duration.ofHours(1)).build();

  OpsService(Pool pool, OpsRepository repo, AuditLog audit, ChangeLog.Feed feed, NodeReader nodes, Relays relays, Duration deadline,
      MeterRegistry registry) {
    this.pool = pool;
    this.repo = repo;
    this.audit = audit;
    this.feed = feed;
    this.nodes = nodes;
    this.relays = relays;
    this.deadline = deadline;
    this.ignoredResults = Counter.builder("mesh.ops.results.ignored")
        .description("Command results that named no open operation of the reporting node (unknown, done, or another node's)")
        .register(registry);
    for (String kind : KINDS) {
      requested.put(kind, Counter.builder("mesh.ops.requested").description("Operations requested, by kind").tag("kind", kind)
          .register(registry));
      for (String status : List.of("succeeded", "failed", "expired")) {
        completed.put(kind + "/" + status, Counter.builder("mesh.ops.completed").description("Operations completed, by kind and status")
            .tag("kind", kind).tag("status", status).register(registry));
      }
    }
  }

  // ---- what operators ask for ----

  /** Binds services to the node (the answer's {@code services}); 200 with the node. */
  Future<JsonObject> services(Caller caller, RequestInfo request, String id, String[] services) {
    Instant now = Times.now();
    return change(caller, id, (tx, node) -> OpsRepository.setServices(tx, id, services, now)
        .compose(v -> audit.success(tx, caller, request, "node.services", Target.of("node", id, node.name()), node.team(), node.environment(),
            new JsonObject().put("services", new JsonArray(List.of(services)))))
        .map(v -> (Object) null))
        .compose(x -> nodes.get(caller, id));
  }

  /**
   * Assigns an ingress (the answer's {@code ingress}); a name in use and not drained is a 409. So is a
   * hostname that an ingress not drained holds anywhere in the mesh (the database's key decides, races
   * included): that 409 reads the same whoever holds it, names nobody, and is audited as a denial of
   * the caller, since the holder may lie outside the caller's reach. A hostname that another team's
   * ingress routes use (API.md §19) is a 409 {@code hostname_taken} naming the field, audited the same.
   *
   * <p>Locks, in the one order every writer of {@code ingress_hostnames} keeps (ARCHITECTURE.md
   * "Ingress routes"): the node's row, the hostname's key (the insert), then the change log's clock;
   * the routes are checked under the clock, which every route change takes first, so a route and an
   * assignment of one hostname by two teams cannot both commit.
   */
  Future<JsonObject> assignIngress(Caller caller, RequestInfo request, String id, Ingress in) {
    Instant now = Times.now();
    Refusal held = Refusal.conflict("hostname " + in.hostname() + " is not available: another ingress holds it; choose another hostname");
    Refusal routed = new Refusal(Refusal.Kind.CONFLICT, "hostname_taken", "hostname " + in.hostname()
        + " is held by another team's ingress routes; choose another hostname", List.of(new Refusal.FieldError("hostname", "is held by another team")));
    return change(caller, id, (tx, node) -> {
      JsonArray next = new JsonArray();
      for (Object o : node.ingress()) {
        JsonObject e = (JsonObject) o;
        if (!e.getString("name").equals(in.name())) {
          next.add(e);
        } else if (!"drained".equals(e.getString("state"))) {
          return Future.failedFuture(Refusal.conflict("node " + id + " already has an ingress named " + in.name() + "; drain it first"));
        }
      }
      if (next.size() >= MAX_INGRESS) return Future.failedFuture(Refusal.conflict("node " + id + " has " + MAX_INGRESS + " ingress already"));
      next.add(new JsonObject().put("name", in.name()).put("hostname", in.hostname()).put("port", in.port()).put("state", "active"));
      // a drained ingress of this name, replaced now, held nothing any more; the new one must win the hostname
      return OpsRepository.releaseHostname(tx, id, in.name())
          .compose(v -> OpsRepository.holdHostname(tx, id, in.name(), in.hostname()))
          .compose(won -> won ? ChangeLog.lock(tx) : Future.<Void>failedFuture(held))
          .compose(v -> OpsRepository.routedByOtherTeam(tx, in.hostname(), node.team()))
          .compose(other -> other ? Future.<Void>failedFuture(routed) : OpsRepository.setIngress(tx, id, next, now))
          .compose(v -> audit.success(tx, caller, request, "node.ingress", Target.of("node", id, node.name()), node.team(), node.environment(),
              new JsonObject().put("ingress", in.name()).put("hostname", in.hostname()).put("port", in.port())))
          .map(v -> (Object) null);
    }).recover(t -> t == held || t == routed ? audit.<Long>refuse(caller, request, "node.ingress", "node", id, (Refusal) t, false) : Future.failedFuture(t))
        .compose(x -> nodes.get(caller, id));
  }

  /** A re-key: the agent makes a new key pair; succeeded once its heartbeat shows a key other than the current one. */
  Future<JsonObject> rekey(Caller caller, RequestInfo request, String id) {
    // the current key as the inventory shows it (the live entry is ahead of the last flush)
    return nodes.get(caller, id).compose(current -> request(caller, request, id, "rekey",
        new JsonObject().put("old_key", current.getString("public_key")), (tx, node) -> Future.succeededFuture()));
  }

  /**
   * A MeshCA certificate reissue: the agent sends a CSR at once (the one-a-minute rule does not hold it
   * back); succeeded once its heartbeat reports a certificate serial other than the one it held when asked.
   */
  Future<JsonObject> reissue(Caller caller, RequestInfo request, String id) {
    return nodes.get(caller, id).compose(current -> {
      JsonObject sync = current.getJsonObject("pki_sync");
      String serial = sync == null ? null : sync.getString("serial");
      if (serial == null) {
        return Future.failedFuture(Refusal.conflict("node " + id + " reports no MeshCA certificate: its agent gets one with its heartbeats "
            + "(a reissue replaces one it holds)"));
      }
      return request(caller, request, id, "reissue_certificate", new JsonObject().put("old_serial", serial), (tx, node) -> Future.succeededFuture());
    });
  }

  /** A relay move: the assignment changes now (relay_status {@code moving}); succeeded once the agent reports the new relay. */
  Future<JsonObject> moveRelay(Caller caller, RequestInfo request, String id, String relay) {
    if (!relays.has(relay)) return Future.failedFuture(Refusal.invalid("relay", "is not a configured relay (GET /v1/relays lists them)"));
    Instant now = Times.now();
    JsonObject target = new JsonObject().put("relay", relay);
    return request(caller, request, id, "move_relay", target, (tx, node) -> {
      if (node.relay().equals(relay)) return Future.failedFuture(Refusal.conflict("node " + id + " is already assigned to relay " + relay));
      target.put("from", node.relay());
      return OpsRepository.setRelay(tx, id, relay, now).mapEmpty();
    });
  }

  /**
   * An ingress drain: the ingress shows {@code draining} now; succeeded once the agent reports it
   * {@code drained} (with no connection left open, when it reports its evidence). {@code graceS}, when
   * given, goes into the target and the command: how long the agent lets in-flight requests finish.
   */
  Future<JsonObject> drain(Caller caller, RequestInfo request, String id, String name, Integer graceS) {
    Instant now = Times.now();
    JsonObject target = new JsonObject().put("name", name);
    if (graceS != null) target.put("grace_s", graceS);
    return request(caller, request, id, "drain_ingress", target, (tx, node) -> {
      JsonObject found = ingress(node.ingress(), name);
      if (found == null) return Future.failedFuture(Refusal.notFound("node " + id + " has no ingress named " + name));
      if ("drained".equals(found.getString("state"))) return Future.failedFuture(Refusal.conflict("ingress " + name + " is drained already"));
      return OpsRepository.setIngress(tx, id, withState(node.ingress(), name, "draining"), now);
    });
  }

  Future<JsonObject> get(Caller caller, String opId) {
    return repo.find(caller.boundary(), opId).compose(op -> op == null
        ? Future.failedFuture(Refusal.notFound("no operation " + opId)) : Future.succeededFuture(toJson(op)));
  }

  Future<JsonObject> ofNode(Caller caller, String nodeId, String status, Page page) {
    return repo.ofNode(caller.boundary(), nodeId, status, page.afterPart(0), page.fetch()).compose(rows -> {
      if (!rows.isEmpty() || page.after() != null) return Future.succeededFuture(page.respond(rows, OpsService::toJson, r -> List.of(r.id())));
      return repo.nodeExists(caller.boundary(), nodeId).compose(exists -> exists
          ? Future.succeededFuture(page.respond(rows, OpsService::toJson, r -> List.of(r.id())))
          : Future.failedFuture(Refusal.notFound("no node " + nodeId)));
    });
  }

  /**
   * A page of the operations inside the caller's boundary, newest first (API.md §9, {@code GET /operations}):
   * the cursor holds the last item's (requested_at, id).
   */
  Future<Buffer> list(Caller caller, OpsQuery.Filter filter, Page page) {
    Instant afterAt = null;
    String afterId = null;
    if (page.after() != null) {
      try {
        afterAt = Instant.parse(page.afterPart(0));
        afterId = page.afterPart(1);
      } catch (RuntimeException e) {
        throw Refusal.invalid("cursor", "is not a cursor this API returned for this list");
      }
    }
    return repo.list(caller.boundary(), filter, afterAt, afterId, page.fetch())
        .compose(rows -> page.render(rows, OpsService::toJson, r -> List.of(r.requestedAt().toString(), r.id())));
  }

  // ---- what heartbeats bring ----

  /** Marks these open operations delivered, once per replica; in the background (a failure leaves them pending: they are sent again anyway). */
  void delivered(List<String> opIds) {
    List<String> fresh = new ArrayList<>();
    for (String id : opIds) if (delivered.asMap().putIfAbsent(id, Boolean.TRUE) == null) fresh.add(id);
    if (fresh.isEmpty()) return;
    repo.markDelivered(fresh.toArray(new String[0]), Times.now()).onFailure(t -> {
      fresh.forEach(delivered::invalidate);
      LOG.debug("operations {} not marked delivered: {}", fresh, t.getMessage());
    });
  }

  /**
   * Completes an operation of {@code nodeId} in the background: {@code actor} is the node (a result) or
   * the coordinator (expiry). A completion already being written by this replica is not started twice.
   */
  Future<Void> complete(Actor actor, RequestInfo request, String nodeId, String opId, String status, JsonObject result) {
    if (!completing.add(opId)) return Future.succeededFuture();
    Instant now = Times.now();
    boolean[] closed = {false};
    return pool.withTransaction(tx -> OpsRepository.lockNode(tx, Boundary.EVERYTHING, nodeId).compose(node ->
      OpsRepository.close(tx, opId, nodeId, status, result, now).compose(op -> {
        if (op == null) return Future.succeededFuture(-1L);
        // a deleted node's operation is closed all the same (it expires), without effects or work to log
        return (node == null ? Future.<Void>succeededFuture() : effects(tx, node, op, status, now))
            .compose(v -> audit.record(tx, AuditEvent.of(actor, request, "operation." + status, "operation", opId,
                "succeeded".equals(status) ? AuditEvent.SUCCESS : AuditEvent.FAILED, op.team(), op.environment())
                .with(new JsonObject().put("node", nodeId).put("kind", op.kind()).put("result", result))))
            .compose(v -> node == null ? Future.succeededFuture(-1L) : OpsRepository.logWork(tx, nodeId))
            .map(seq -> {
              completed.get(op.kind() + "/" + status).increment();
              closed[0] = true;
              LOG.info("operation {} ({}) of node {}: {}{}", opId, op.kind(), nodeId, status,
                  "succeeded".equals(status) ? "" : " (" + result.getString("detail", "") + ")");
              return seq;
            });
      }))).<Void>map(seq -> {
      if (closed[0]) outcomes.committed(status); // committed: counted once, by the replica that closed it
      if (seq >= 0) feed.announce();
      return null;
    }).onComplete(ar -> {
      completing.remove(opId);
      if (ar.failed()) LOG.warn("operation {} of node {} not completed yet (it stays open and is retried): {}", opId, nodeId,
          ar.cause().getMessage());
    });
  }

  /** What this replica has closed since it started, by outcome. */
  OperationOutcomes outcomes() {
    return outcomes;
  }

  /** A result naming no open operation of the reporting node. */
  void ignored() {
    ignoredResults.increment();
  }

  /** Expires open operations past their deadline (every replica sweeps; the first to close one wins). */
  Future<Integer> expireOverdue() {
    return repo.overdue(Times.now(), 200).compose(overdue -> {
      Future<Void> chain = Future.succeededFuture();
      for (String[] o : overdue) {
        chain = chain.compose(v -> complete(Actor.system("operation expiry"), new RequestInfo(UUID.randomUUID().toString().replace("-", ""), null), o[1], o[0],
            "expired",
            new JsonObject().put("detail", "not completed within its deadline (operations.deadline)")).recover(t -> Future.succeededFuture()));
      }
      return chain.map(overdue.size());
    });
  }

  /** What closing an operation changes besides its row: a failed move returns the node to its relay, a drain settles the ingress state. */
  private static Future<Void> effects(SqlClient tx, OpsRepository.NodeRow node, OpsRepository.Operation op, String status, Instant now) {
    boolean ok = "succeeded".equals(status);
    switch (op.kind()) {
      case "move_relay" -> {
        String to = op.target().getString("relay");
        if (!ok && node.relay().equals(to)) return OpsRepository.setRelay(tx, node.id(), op.target().getString("from", ""), now).mapEmpty();
      }
      case "drain_ingress" -> {
        String name = op.target().getString("name");
        JsonObject in = ingress(node.ingress(), name);
        if (in != null && "draining".equals(in.getString("state"))) {
          Future<Void> settled = OpsRepository.setIngress(tx, node.id(), withState(node.ingress(), name, ok ? "drained" : "active"), now);
          // drained: its hostname is free for any ingress of the mesh
          return ok ? settled.compose(v -> OpsRepository.releaseHostname(tx, node.id(), name)) : settled;
        }
      }
      default -> { }
    }
    return Future.succeededFuture();
  }

  // ---- shared steps ----

  private interface Step {
    Future<?> run(SqlClient tx, OpsRepository.NodeRow node);
  }

  /** A change of a node's work: lock the node (404 outside the caller), run {@code step}, log the node's work; read-your-writes. */
  private Future<Long> change(Caller caller, String id, Step step) {
    return pool.withTransaction(tx -> OpsRepository.lockNode(tx, caller.boundary(), id).compose(node -> node == null
        ? Future.failedFuture(Refusal.notFound("no node " + id))
        : step.run(tx, node).compose(v -> OpsRepository.logWork(tx, id))))
        .compose(seq -> {
          feed.announce();
          return feed.applied(seq).map(seq);
        });
  }

  /** Requests an operation: {@code prepare} checks and changes the node, then the pending row, its audit event and the node's work. */
  private Future<JsonObject> request(Caller caller, RequestInfo request, String id, String kind, JsonObject target, Step prepare) {
    String opId = Ids.next("op");
    Instant now = Times.now();
    Actor actor = Actor.of(caller);
    OpsRepository.NodeRow[] seen = new OpsRepository.NodeRow[1];
    return change(caller, id, (tx, node) -> {
      seen[0] = node;
      return prepare.run(tx, node)
          .compose(v -> OpsRepository.insert(tx, opId, node, kind, target, actor, now, now.plus(deadline)))
          .compose(v -> audit.success(tx, caller, request, "node." + kind, Target.of("node", id, node.name()), node.team(), node.environment(),
              new JsonObject().put("operation", opId).put("target", target)));
    }).map(seq -> {
      requested.get(kind).increment();
      OpsRepository.NodeRow node = seen[0];
      return toJson(new OpsRepository.Operation(opId, id, node.team(), node.environment(), kind, "pending", target, actor, now,
          now.plus(deadline), null, null, null));
    });
  }

  static JsonObject ingress(JsonArray list, String name) {
    for (Object o : list) if (o instanceof JsonObject e && name.equals(e.getString("name"))) return e;
    return null;
  }

  private static JsonArray withState(JsonArray list, String name, String state) {
    JsonArray out = new JsonArray();
    for (Object o : list) {
      JsonObject e = ((JsonObject) o).copy();
      if (name.equals(e.getString("name"))) e.put("state", state);
      out.add(e);
    }
    return out;
  }

  /** The operation record of API.md §9 (every field present). */
  static JsonObject toJson(OpsRepository.Operation op) {
    return new JsonObject()
        .put("id", op.id())
        .put("node_id", op.nodeId())
        .put("kind", op.kind())
        .put("status", op.status())
        .put("target", op.target())
        .put("requested_by", new JsonObject().put("type", op.requestedBy().type()).put("id", op.requestedBy().id())
            .put("name", op.requestedBy().name()))
        .put("requested_at", Times.format(op.requestedAt()))
        .put("deadline", Times.format(op.deadline()))
        .put("delivered_at", op.deliveredAt() == null ? null : Times.format(op.deliveredAt()))
        .put("completed_at", op.completedAt() == null ? null : Times.format(op.completedAt()))
        .put("result", op.result());
  }

  /** How many operations of the caller's boundary are in flight (pending or delivered): the panel's overview. */
  public Future<Long> inFlight(Caller caller) {
    return repo.openCount(caller.boundary());
  }
}
