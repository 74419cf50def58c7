package io.meshplane.policy;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.node.ChangeLog;
import io.meshplane.node.ChangeLog.NodeFacts;
import io.meshplane.node.NodePolicy;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * ACL policy per team+environment (SPEC §4): read, update with optimistic locking and the policy's own
 * tests, history, restore of an old version, and previews. Takes values and the {@link Caller}, not
 * HTTP. An update is one transaction: the clock's lock (so updates of every policy are serialised
 * with the change log), the version check, the new version, its change-log entry and its audit event.
 */
public final class PolicyService {
  /** Where a policy lives; both are concrete slugs. */
  public record Scope(String team, String environment) {}

  private final Pool pool;
  private final PolicyRepository policies;
  private final ChangeLog log;
  private final AuditLog audit;
  private final NodePolicy model;
  private final Runnable announce;

  PolicyService(Pool pool, PolicyRepository policies, ChangeLog log, AuditLog audit, NodePolicy model, Runnable announce) {
    this.pool = pool;
    this.policies = policies;
    this.log = log;
    this.audit = audit;
    this.model = model;
    this.announce = announce;
  }

  public Future<JsonObject> get(Caller caller, Scope scope) {
    inside(caller, scope);
    return policies.current(scope.team(), scope.environment()).map(s -> toJson(scope, s));
  }

  /**
   * Stores a new version. {@code ifMatch} (the version the client read; null: none sent) must be the
   * current version, else 409. The policy's tests must pass against the current inventory, else 400
   * naming the test and nothing is stored.
   */
  public Future<JsonObject> put(Caller caller, RequestInfo request, Scope scope, PolicyDocument doc, Long ifMatch) {
    return store(caller, request, scope, doc, ifMatch, null);
  }

  /** A rollback: stores version {@code from}'s policy again as a new version (audited as {@code acl.rollback}). */
  public Future<JsonObject> restore(Caller caller, RequestInfo request, Scope scope, long from, Long ifMatch) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), from).compose(old -> {
      if (old == null) return Future.failedFuture(Refusal.notFound("no policy version " + from));
      return store(caller, request, scope, PolicyDocument.parse(old.policy()), ifMatch, from);
    });
  }

  private Future<JsonObject> store(Caller caller, RequestInfo request, Scope scope, PolicyDocument doc, Long ifMatch, Long restoredFrom) {
    inside(caller, scope);
    String action = restoredFrom == null ? "acl.update" : "acl.rollback";
    JsonObject stored = doc.toJson();
    Instant now = Times.now();
    // The tests run inside the transaction, after the clock's lock: every enrollment, re-tag and
    // deletion bumps the clock in its own transaction, so the inventory read here holds every change
    // committed before this policy, and none can slip in between the tests and the store. The
    // inventory is read only when there are tests (O(nodes of the team+environment)).
    return pool.withTransaction(tx -> tx.query("SELECT seq FROM mesh_clock FOR UPDATE").execute()
          .compose(v -> doc.tests().isEmpty() ? Future.succeededFuture(List.<NodeFacts>of()) : log.nodesOf(tx, scope.team(), scope.environment()))
          .compose(nodes -> {
            List<Refusal.FieldError> failures = new Evaluation(doc, nodes).runTests();
            return failures.isEmpty() ? Future.<Void>succeededFuture() : Future.<Void>failedFuture(Refusal.invalid(failures));
          })
          .compose(v -> policies.current(tx, scope.team(), scope.environment()))
          .compose(current -> {
            long old = current == null ? 0 : current.version();
            if (ifMatch != null && ifMatch != old) {
              return Future.failedFuture(Refusal.conflict("the policy is at version " + old + ", not " + ifMatch + ": read it again"));
            }
            long version = old + 1;
            PolicyRepository.Stored s = new PolicyRepository.Stored(scope.team(), scope.environment(), version, stored, now,
                caller.kind().wire, caller.id(), caller.name(), restoredFrom);
            JsonObject details = new JsonObject().put("old_version", old).put("new_version", version);
            if (restoredFrom != null) details.put("restored_from", restoredFrom);
            return policies.insert(tx, s)
                .compose(x -> ChangeLog.append(tx, "policy", new JsonObject().put("team", scope.team())
                    .put("environment", scope.environment()).put("version", version).put("policy", stored)))
                .compose(seq -> audit.success(tx, caller, request, action, "acl", scope.team() + "/" + scope.environment(),
                    scope.team(), scope.environment(), details).map(x -> new Object[] {s, seq}));
          })).compose(done -> {
            announce.run();
            PolicyRepository.Stored s = (PolicyRepository.Stored) done[0];
            return model.applied((Long) done[1]).map(v -> toJson(scope, s));
          });
  }

  public Future<JsonObject> versions(Caller caller, Scope scope, Page page) {
    inside(caller, scope);
    String after = page.afterPart(0);
    return policies.versions(scope.team(), scope.environment(), after == null ? null : Long.parseLong(after), page.fetch())
        .map(rows -> page.respond(rows, PolicyService::summary, s -> List.of(Long.toString(s.version()))));
  }

  public Future<JsonObject> version(Caller caller, Scope scope, long v) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), v).compose(s -> s == null
        ? Future.failedFuture(Refusal.notFound("no policy version " + v))
        : Future.succeededFuture(toJson(scope, s)));
  }

  /**
   * A candidate policy's effect, saving nothing: for a node, the grants that would apply and the peers
   * it would gain and lose (against the current policy and inventory); for {@code src -> dst} on a
   * port, whether it would be allowed and by which grants. Either way, the candidate's own tests run
   * against the inventory, and their results are in {@code tests} (a PUT of it would be refused with
   * the same failures).
   */
  public Future<JsonObject> preview(Caller caller, Scope scope, PolicyDocument candidate, String node, String src, String dst,
      String proto, int port) {
    inside(caller, scope);
    return log.nodesOf(scope.team(), scope.environment()).compose(nodes -> policies.current(scope.team(), scope.environment())
        .map(current -> {
          PolicyDocument now = current == null ? PolicyDocument.EMPTY : PolicyDocument.parse(current.policy());
          Evaluation before = new Evaluation(now, nodes);
          Evaluation after = new Evaluation(candidate, nodes);
          JsonObject out = new JsonObject().put("team", scope.team()).put("environment", scope.environment())
              .put("current_version", current == null ? 0 : current.version());
          // the candidate's own tests, against the same inventory: what a PUT of it would say, before saving
          JsonArray failures = new JsonArray();
          for (Refusal.FieldError e : after.runTests()) failures.add(new JsonObject().put("field", e.field()).put("message", e.message()));
          out.put("tests", new JsonObject().put("run", candidate.tests().size()).put("passed", failures.isEmpty()).put("failures", failures));
          if (node != null) {
            NodeFacts n = find(nodes, node);
            if (n == null) throw Refusal.invalid("/node", "names no node of " + scope.team() + "/" + scope.environment());
            Set<String> was = ids(before.peersOf(n));
            Set<String> will = ids(after.peersOf(n));
            JsonArray gained = new JsonArray();
            JsonArray lost = new JsonArray();
            for (NodeFacts p : nodes) {
              if (will.contains(p.id()) && !was.contains(p.id())) gained.add(brief(p));
              if (was.contains(p.id()) && !will.contains(p.id())) lost.add(brief(p));
            }
            out.put("node", brief(n))
                .put("acl_matches", new JsonArray(after.matches(n)))
                .put("acl_matches_now", new JsonArray(before.matches(n)))
                .put("peers", new JsonObject().put("count", will.size()).put("count_now", was.size()).put("gained", gained).put("lost", lost));
          } else {
            List<NodeFacts> froms = after.named(src);
            List<NodeFacts> tos = after.named(dst);
            if (froms.isEmpty()) throw Refusal.invalid("/src", "names no node of " + scope.team() + "/" + scope.environment());
            if (tos.isEmpty()) throw Refusal.invalid("/dst", "names no node of " + scope.team() + "/" + scope.environment());
            NodeFacts a = froms.get(0);
            NodeFacts b = tos.get(0);
            out.put("src", brief(a)).put("dst", brief(b)).put("port", proto.equals("icmp") ? "icmp" : proto + "/" + port)
                .put("allowed", after.allowed(a, b, proto, port))
                .put("allowed_now", before.allowed(a, b, proto, port))
                .put("grants", new JsonArray(after.allowing(a, b, proto, port).stream().map(PolicyDocument.Grant::text).toList()));
          }
          return out;
        }));
  }

  private static NodeFacts find(List<NodeFacts> nodes, String idOrName) {
    for (NodeFacts n : nodes) if (n.id().equals(idOrName) || n.name().equals(idOrName)) return n;
    return null;
  }

  private static Set<String> ids(List<NodeFacts> nodes) {
    Set<String> out = new HashSet<>();
    for (NodeFacts n : nodes) out.add(n.id());
    return out;
  }

  private static JsonObject brief(NodeFacts n) {
    return new JsonObject().put("id", n.id()).put("name", n.name());
  }

  /** A policy outside the caller's boundary does not exist for it. */
  private static void inside(Caller caller, Scope scope) {
    if (!caller.boundary().covers(scope.team(), scope.environment())) {
      throw Refusal.notFound("no policy for " + scope.team() + "/" + scope.environment() + " in your scope");
    }
  }

  static JsonObject toJson(Scope scope, PolicyRepository.Stored s) {
    JsonObject doc = s == null ? PolicyDocument.EMPTY.toJson() : s.policy();
    return new JsonObject()
        .put("team", scope.team())
        .put("environment", scope.environment())
        .put("version", s == null ? 0 : s.version())
        .put("grants", doc.getJsonArray("grants"))
        .put("tests", doc.getJsonArray("tests", new JsonArray()))
        .put("created_at", s == null ? null : Times.format(s.createdAt()))
        .put("created_by", s == null ? null : new JsonObject().put("type", s.actorType()).put("id", s.actorId()).put("name", s.actorName()))
        .put("restored_from", s == null ? null : s.restoredFrom());
  }

  private static JsonObject summary(PolicyRepository.Stored s) {
    return new JsonObject()
        .put("version", s.version())
        .put("created_at", Times.format(s.createdAt()))
        .put("created_by", new JsonObject().put("type", s.actorType()).put("id", s.actorId()).put("name", s.actorName()))
        .put("restored_from", s.restoredFrom())
        .put("grants", s.policy().getJsonArray("grants").size());
  }
}
