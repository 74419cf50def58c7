package io.meshplane.policy;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.common.BoundedWork;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeFacts;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import java.time.Instant;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * ACL policy per team+environment (API.md §10): read, update with optimistic locking and the policy's own
 * tests, history, restore of an old version, and previews. Takes values and the {@link Caller}, not
 * HTTP.
 *
 * <p>Evaluating a policy (its tests, a preview, the estimate of its compile) costs work that grows
 * with the document and the inventory, so it runs on a policy work pool (previews on one, updates on
 * another, so that read-only previews never take the slots an update needs; {@link BoundedWork}: its
 * own threads, a deadline, bounded per caller and in all), against this replica's peer model's copy
 * of the team's nodes, never on an event loop and never under a lock. An update evaluates first, then
 * takes the clock's lock only to check that the inventory its tests ran on has not changed since (else
 * it evaluates again, up to {@value #ATTEMPTS} times), check the version, and store the version, its
 * change-log entry and its audit event: the lock that every team's enrollments need is held for a few
 * statements, whatever the policy.
 */
final class PolicyService {
  /** Where a policy lives; both are concrete slugs. */
  public record Scope(String team, String environment) {}

  /** Evaluations of one update before it gives up on an inventory that keeps changing. */
  static final int ATTEMPTS = 3;
  /** The most peers a node preview lists as gained and as lost (the counts are always whole). */
  static final int PREVIEW_LIST_MAX = 1000;
  private static final String WORK = "policy evaluation";
  /**
   * Runs at the start of every evaluation, on its worker thread: tests hold an evaluation here to
   * prove that nothing else waits for it. A no-op in production.
   */
  static volatile java.util.function.Consumer<Scope> evaluating = scope -> { };

  private final io.vertx.core.Vertx vertx;
  private final Pool pool;
  private final PolicyRepository policies;
  private final AuditLog audit;
  private final ChangeLog.Feed changes;
  private final PeerModel model;
  private final BoundedWork previews;
  private final BoundedWork updates;

  PolicyService(io.vertx.core.Vertx vertx, Pool pool, PolicyRepository policies, AuditLog audit, ChangeLog.Feed changes, PeerModel model,
      BoundedWork previews, BoundedWork updates) {
    this.vertx = vertx;
    this.pool = pool;
    this.policies = policies;
    this.audit = audit;
    this.changes = changes;
    this.model = model;
    this.previews = previews;
    this.updates = updates;
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
  public Future<JsonObject> put(Caller caller, RequestInfo request, Scope scope, JsonObject body, Long ifMatch) {
    // parsed on the update pool: validating a 64 KiB document costs milliseconds, never an event loop's
    return store(caller, request, scope, () -> PolicyDocument.parse(body), ifMatch, null);
  }

  /** A rollback: stores version {@code from}'s policy again as a new version (audited as {@code acl.rollback}). */
  public Future<JsonObject> restore(Caller caller, RequestInfo request, Scope scope, long from, Long ifMatch) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), from).compose(old -> {
      if (old == null) return Future.failedFuture(Refusal.notFound("no policy version " + from));
      return store(caller, request, scope, () -> PolicyDocument.parse(old.policy()), ifMatch, from);
    });
  }

  /** The inventory moved under an evaluation: evaluate again. */
  private static final class Moved extends RuntimeException {
    Moved() {
      super(null, null, false, false);
    }
  }

  /** A document as the update pool parsed it, and the inventory its tests passed on. */
  private record Evaluated(PolicyDocument doc, PeerModel.Inventory inventory) {}

  private Future<JsonObject> store(Caller caller, RequestInfo request, Scope scope, java.util.function.Supplier<PolicyDocument> doc,
      Long ifMatch, Long restoredFrom) {
    inside(caller, scope);
    // a stale If-Match fails before any evaluation (it would fail after it anyway)
    Future<Void> fresh = ifMatch == null ? Future.succeededFuture() : policies.current(scope.team(), scope.environment()).compose(c -> {
      long old = c == null ? 0 : c.version();
      return old == ifMatch ? Future.<Void>succeededFuture()
          : Future.failedFuture(Refusal.conflict("the policy is at version " + old + ", not " + ifMatch + ": read it again"));
    });
    return fresh.compose(v -> attempt(caller, request, scope, doc, ifMatch, restoredFrom, 1)).compose(done -> {
      changes.announce();
      PolicyRepository.Stored s = (PolicyRepository.Stored) done[0];
      return changes.applied((Long) done[1]).map(v -> toJson(scope, s));
    });
  }

  private Future<Object[]> attempt(Caller caller, RequestInfo request, Scope scope, java.util.function.Supplier<PolicyDocument> parse,
      Long ifMatch, Long restoredFrom, int attempt) {
    return evaluate(updates, caller, scope, deadline -> {
      PolicyDocument doc = parse.get();
      PeerModel.Inventory inventory = model.inventory(scope.team(), scope.environment(), changes.position(), deadline);
      Evaluation e = new Evaluation(doc, inventory.nodes(), deadline);
      List<Refusal.FieldError> failures = e.runTests();
      if (!failures.isEmpty()) throw Refusal.invalid(failures);
      CompileEstimate.of(doc, inventory.nodes(), deadline).check();
      return new Evaluated(doc, inventory);
    }).compose(done -> pool.withTransaction(tx -> ChangeLog.lock(tx)
        .compose(v -> ChangeLog.inventoryChangesAfter(tx, done.inventory().position(), CHANGES_CHECKED))
        .compose(changes -> moved(scope, done.inventory(), changes) ? Future.failedFuture(new Moved())
            : commit(tx, caller, request, scope, done.doc(), ifMatch, restoredFrom))))
        .recover(t -> {
          if (!(t instanceof Moved)) return Future.failedFuture(t);
          if (attempt < ATTEMPTS) return attempt(caller, request, scope, parse, ifMatch, restoredFrom, attempt + 1);
          return Future.failedFuture(Refusal.unavailable("busy", "the nodes of " + scope.team() + "/" + scope.environment()
              + " changed during each of " + ATTEMPTS + " evaluations of the policy's tests; retry", 2));
        });
  }

  /** Inventory changes looked at per check; more than this after the evaluation's position counts as moved. */
  private static final int CHANGES_CHECKED = 10_000;

  /** Whether a change after the inventory's position touches the team+environment's nodes (an enrollment there, a node of it). */
  private static boolean moved(Scope scope, PeerModel.Inventory inventory, List<ChangeLog.Entry> changes) {
    if (changes.isEmpty()) return false;
    if (changes.size() >= CHANGES_CHECKED) return true;
    Set<String> ids = null;
    for (ChangeLog.Entry e : changes) {
      JsonObject d = e.data();
      if (e.kind().equals("enroll")) {
        if (scope.team().equals(d.getString("team")) && scope.environment().equals(d.getString("environment"))) return true;
        continue;
      }
      if (ids == null) {
        ids = new HashSet<>();
        for (NodeFacts n : inventory.nodes()) ids.add(n.id());
      }
      if (ids.contains(d.getString("id"))) return true;
    }
    return false;
  }

  /** Under the clock's lock: the version check, the new version, its change-log entry and audit event; {stored, seq}. */
  private Future<Object[]> commit(SqlClient tx, Caller caller, RequestInfo request, Scope scope, PolicyDocument doc, Long ifMatch,
      Long restoredFrom) {
    String action = restoredFrom == null ? "acl.update" : "acl.rollback";
    JsonObject stored = doc.toJson();
    Instant now = Times.now();
    return policies.current(tx, scope.team(), scope.environment()).compose(current -> {
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
    });
  }

  /**
   * Runs {@code job} on the policy work pool once this replica's model holds every change committed
   * before the request (read-your-writes across replicas: an enrollment on another replica is in the
   * inventory the job sees, within the feed's bounded wait).
   */
  private <T> Future<T> evaluate(BoundedWork work, Caller caller, Scope scope,
      java.util.function.Function<io.meshplane.common.Deadline, T> job) {
    // admitted first: a refused request costs no database round trip
    return work.submit(caller.id(), scope.team() + "/" + scope.environment(), WORK,
        () -> ChangeLog.clock(pool).compose(changes::applied), deadline -> {
          if (io.vertx.core.Context.isOnEventLoopThread()) throw new IllegalStateException("a policy evaluation on an event loop");
          evaluating.accept(scope);
          return job.apply(deadline.check());
        });
  }

  /**
   * A node's peers and inbound rules as its agent holds them (the dashboard's node page): the whole
   * set, O(peers) to build and encode, so on a worker of the shared pool; 404 when this replica's model
   * does not hold the node or it lies outside the caller's boundary.
   */
  public Future<Buffer> peers(Caller caller, String nodeId) {
    return vertx.<Buffer>executeBlocking(() -> {
      JsonObject view = model.view(nodeId, caller.boundary());
      return view == null ? null : view.toBuffer();
    }, false).compose(encoded -> encoded == null ? Future.failedFuture(Refusal.notFound("no node " + nodeId)) : Future.succeededFuture(encoded));
  }

  public Future<Buffer> versions(Caller caller, Scope scope, Page page) {
    inside(caller, scope);
    String after = page.afterPart(0);
    return policies.versions(scope.team(), scope.environment(), after == null ? null : Long.parseLong(after), page.fetch())
        .compose(rows -> page.render(rows, PolicyService::summary, s -> List.of(Long.toString(s.version()))));
  }

  public Future<JsonObject> version(Caller caller, Scope scope, long v) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), v).compose(s -> s == null
        ? Future.failedFuture(Refusal.notFound("no policy version " + v))
        : Future.succeededFuture(toJson(scope, s)));
  }

  /**
   * A candidate policy's effect, saving nothing: for a node, the grants that would apply and the peers
   * it would gain and lose (against the current policy and inventory; at most
   * {@value #PREVIEW_LIST_MAX} of each listed, the counts whole); for {@code src -> dst} on a port,
   * whether it would be allowed and by which grants. Either way, the candidate's own tests run against
   * the inventory, and their results are in {@code tests} (a PUT of it would be refused with the same
   * failures). Evaluated and encoded on the policy work pool: the answer comes back as bytes.
   */
  public Future<Buffer> preview(Caller caller, Scope scope, JsonObject candidateBody, String node, String src, String dst,
      String proto, int port) {
    inside(caller, scope);
    return policies.current(scope.team(), scope.environment()).compose(current -> evaluate(previews, caller, scope, deadline -> {
      PolicyDocument candidate = underPolicy(() -> PolicyDocument.parse(candidateBody));
      PolicyDocument now = current == null ? PolicyDocument.EMPTY : PolicyDocument.parse(current.policy());
      PeerModel.Inventory inventory = model.inventory(scope.team(), scope.environment(), changes.position(), deadline);
      Evaluation after = new Evaluation(candidate, inventory.nodes(), deadline);
      Evaluation before = after.under(now);
      JsonObject out = new JsonObject().put("team", scope.team()).put("environment", scope.environment())
          .put("current_version", current == null ? 0 : current.version());
      // the candidate's own tests, against the same inventory: what a PUT of it would say, before saving
      underPolicy(() -> {
        after.checkSize();
        return null;
      });
      JsonArray failures = new JsonArray();
      for (Refusal.FieldError e : after.runTests()) failures.add(new JsonObject().put("field", e.field()).put("message", e.message()));
      out.put("tests", new JsonObject().put("run", candidate.tests().size()).put("passed", failures.isEmpty()).put("failures", failures));
      if (node != null) {
        int n = after.find(node);
        if (n < 0) throw Refusal.invalid("/node", "names no node of " + scope.team() + "/" + scope.environment());
        BitSet was = before.peersOf(n);
        BitSet will = after.peersOf(n);
        BitSet gained = (BitSet) will.clone();
        gained.andNot(was);
        BitSet lost = (BitSet) was.clone();
        lost.andNot(will);
        out.put("node", brief(after.node(n)))
            .put("acl_matches", new JsonArray(after.matches(n)))
            .put("acl_matches_now", new JsonArray(before.matches(n)))
            .put("peers", new JsonObject().put("count", will.cardinality()).put("count_now", was.cardinality())
                .put("gained_count", gained.cardinality()).put("lost_count", lost.cardinality())
                .put("gained", briefs(after, gained)).put("lost", briefs(after, lost)));
      } else {
        List<Integer> froms = after.named(src);
        List<Integer> tos = after.named(dst);
        if (froms.isEmpty()) throw Refusal.invalid("/src", "names no node of " + scope.team() + "/" + scope.environment());
        if (tos.isEmpty()) throw Refusal.invalid("/dst", "names no node of " + scope.team() + "/" + scope.environment());
        int a = froms.get(0);
        int b = tos.get(0);
        out.put("src", brief(after.node(a))).put("dst", brief(after.node(b))).put("port", proto.equals("icmp") ? "icmp" : proto + "/" + port)
            .put("allowed", after.allowed(a, b, proto, port))
            .put("allowed_now", before.allowed(a, b, proto, port))
            .put("grants", new JsonArray(after.allowing(a, b, proto, port).stream().map(PolicyDocument.Grant::text).toList()));
      }
      return out.toBuffer();
    }));
  }

  /**
   * A candidate policy's fleet-wide effect against the current policy and inventory ({@link PolicyImpact}):
   * the nodes and node pairs that gain and lose peers, the ports they gain and lose, with examples.
   * Saves nothing. On the preview pool, like a preview; the candidate's compile estimate is checked
   * first (a candidate a PUT would refuse for its cost is refused here too), then the impact's own
   * bound on class pairs, both before any pair is compared.
   */
  public Future<Buffer> impact(Caller caller, Scope scope, JsonObject candidateBody) {
    inside(caller, scope);
    return policies.current(scope.team(), scope.environment()).compose(current -> evaluate(previews, caller, scope, deadline -> {
      PolicyDocument candidate = underPolicy(() -> PolicyDocument.parse(candidateBody));
      PolicyDocument now = current == null ? PolicyDocument.EMPTY : PolicyDocument.parse(current.policy());
      PeerModel.Inventory inventory = model.inventory(scope.team(), scope.environment(), changes.position(), deadline);
      underPolicy(() -> {
        CompileEstimate.of(candidate, inventory.nodes(), deadline).check();
        return null;
      });
      return new JsonObject().put("team", scope.team()).put("environment", scope.environment())
          .put("current_version", current == null ? 0 : current.version())
          .mergeIn(PolicyImpact.of(now, candidate, inventory.nodes(), deadline)).toBuffer();
    }));
  }

  /**
   * Whether the current policy lets {@code tag} (as a principal, and each node carrying it) reach node
   * {@code target} on proto/port: an ingress route's check (API.md §18), evaluated like a preview, on the
   * preview pool against the model's copy of the inventory. {@code {policy_version, missing}}: missing is
   * null when allowed, else a sentence naming the grant that is missing.
   */
  public Future<JsonObject> reach(Caller caller, Scope scope, String tag, String target, String proto, int port) {
    inside(caller, scope);
    return policies.current(scope.team(), scope.environment()).compose(current -> evaluate(previews, caller, scope, deadline -> {
      PolicyDocument now = current == null ? PolicyDocument.EMPTY : PolicyDocument.parse(current.policy());
      PeerModel.Inventory inventory = model.inventory(scope.team(), scope.environment(), changes.position(), deadline);
      Evaluation e = new Evaluation(now, inventory.nodes(), deadline);
      JsonObject out = new JsonObject().put("policy_version", current == null ? 0 : current.version());
      int d = e.find(target);
      String portText = proto + "/" + port;
      if (d < 0) return out.put("missing", "the target node is not known to the policy yet; retry");
      NodeFacts dst = e.node(d);
      String dstText = dst.tags().length > 0 ? dst.tags()[0] : dst.name();
      String names = dst.name() + (dst.tags().length > 0 ? " (" + String.join(", ", dst.tags()) + ")" : "");
      if (!e.tagAllowed(tag, d, proto, port)) {
        return out.put("missing", "no grant lets " + tag + " reach " + names + " " + portText + ": add {\"src\": [\"" + tag
            + "\"], \"dst\": [\"" + dstText + "\"], \"ports\": [\"" + portText + "\"]} to the policy of " + scope.team() + "/"
            + scope.environment());
      }
      for (int s : e.named(tag)) {
        if (s != d && !e.allowed(s, d, proto, port)) {
          return out.put("missing", "no grant lets " + e.node(s).name() + " (" + tag + ") reach " + names + " " + portText);
        }
      }
      return out.putNull("missing");
    }));
  }

  /** Runs {@code check} of the candidate; its refusal names the candidate's own pointers under {@code /policy}. */
  private static <T> T underPolicy(java.util.function.Supplier<T> check) {
    try {
      return check.get();
    } catch (Refusal r) {
      throw Refusal.invalid(r.errors().stream().map(e -> new Refusal.FieldError("/policy" + e.field(), e.message())).toList());
    }
  }

  /** The first {@value #PREVIEW_LIST_MAX} nodes of {@code set}, in inventory order. */
  private static JsonArray briefs(Evaluation e, BitSet set) {
    JsonArray out = new JsonArray();
    for (int i = set.nextSetBit(0); i >= 0 && out.size() < PREVIEW_LIST_MAX; i = set.nextSetBit(i + 1)) out.add(brief(e.node(i)));
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
