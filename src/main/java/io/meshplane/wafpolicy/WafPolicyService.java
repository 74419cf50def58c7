package io.meshplane.wafpolicy;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.waf.Waf;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Traffic policies (API.md §20): one versioned document per team and environment, checked by the WAF's
 * own compiler and its tests before it is stored, with history, rollback and a preview against sample
 * requests. Compiling and evaluating cost CPU that grows with the document and the samples: they run
 * on this feature's {@link BoundedWork} pool, never on an event loop, one team never taking every slot.
 */
final class WafPolicyService {
  /** Which policy. */
  record Scope(String team, String environment) {
    String group() {
      return team + "/" + environment;
    }
  }

  static final int MAX_SAMPLES = 100;
  private static final String WORK = "traffic policy check";
  private final WafPolicyRepository policies;
  private final AuditLog audit;
  private final BoundedWork work;

  private final ChangeLog.Feed changes;
  private final WafPolicyModule.Edges edges;

  WafPolicyService(WafPolicyRepository policies, AuditLog audit, BoundedWork work, ChangeLog.Feed changes, WafPolicyModule.Edges edges) {
    this.changes = changes;
    this.edges = edges;
    this.policies = policies;
    this.audit = audit;
    this.work = work;
  }

  static void inside(Caller caller, Scope scope) {
    if (!caller.boundary().covers(scope.team(), scope.environment())) {
      throw Refusal.notFound("no traffic policy for " + scope.group() + " in your scope");
    }
  }

  Future<JsonObject> get(Caller caller, Scope scope) {
    inside(caller, scope);
    return policies.current(scope.team(), scope.environment()).map(s -> toJson(scope, s));
  }

  Future<JsonObject> version(Caller caller, Scope scope, long v) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), v).compose(s -> s == null
        ? Future.failedFuture(Refusal.notFound("no traffic policy version " + v + " of " + scope.group()))
        : Future.succeededFuture(toJson(scope, s)));
  }

  Future<Buffer> versions(Caller caller, Scope scope, Page page) {
    inside(caller, scope);
    String after = page.afterPart(0);
    return policies.versions(scope.team(), scope.environment(), after == null ? null : Long.parseLong(after), page.fetch())
        .compose(rows -> page.render(rows, WafPolicyService::summary, s -> List.of(Long.toString(s.version()))));
  }

  /**
   * Stores {@code document} as the next version: compiled (every fault named), its tests run (any failing
   * refuses the whole, naming {@code tests[i]}), then written; {@code ifMatch} (null: not sent) must be the
   * current version, else 409.
   */
  Future<JsonObject> put(Caller caller, RequestInfo request, Scope scope, String document, Long ifMatch) {
    return store(caller, request, scope, document, ifMatch, null);
  }

  /** A rollback: version {@code from}'s document stored again as a new version, checked again (the managed set may have changed). */
  Future<JsonObject> restore(Caller caller, RequestInfo request, Scope scope, long from, Long ifMatch) {
    inside(caller, scope);
    return policies.version(scope.team(), scope.environment(), from).compose(old -> old == null
        ? Future.failedFuture(Refusal.notFound("no traffic policy version " + from + " of " + scope.group()))
        : store(caller, request, scope, old.document(), ifMatch, from));
  }

  private Future<JsonObject> store(Caller caller, RequestInfo request, Scope scope, String document, Long ifMatch, Long restoredFrom) {
    inside(caller, scope);
    Future<Void> fresh = ifMatch == null ? Future.succeededFuture() : policies.current(scope.team(), scope.environment())
        .compose(c -> stale(c, ifMatch) == null ? Future.<Void>succeededFuture() : Future.failedFuture(stale(c, ifMatch)));
    return fresh.compose(v -> work.submit(caller.id(), scope.group(), WORK, deadline -> {
      Waf.Policy p = Waf.compile(document);
      deadline.check();
      List<Refusal.FieldError> failed = new ArrayList<>();
      List<Waf.TestResult> results = p.test();
      for (int i = 0; i < results.size(); i++) {
        Waf.TestResult r = results.get(i);
        if (!r.passed()) failed.add(new Refusal.FieldError("tests[" + i + "]", failure(r)));
      }
      if (!failed.isEmpty()) throw Refusal.invalid(failed); // each failing test named, with what it got instead: nothing stored
      return new Object[] {p, results.size()};
    })).compose(checked -> {
      Waf.Policy p = (Waf.Policy) checked[0];
      Instant now = Times.now();
      return policies.pool().withTransaction(tx -> WafPolicyRepository.lock(tx, scope.team(), scope.environment())
          .compose(x -> policies.current(tx, scope.team(), scope.environment()))
          .compose(current -> {
            Refusal conflict = ifMatch == null ? null : stale(current, ifMatch);
            if (conflict != null) return Future.failedFuture(conflict);
            long old = current == null ? 0 : current.version();
            WafPolicyRepository.Stored s = new WafPolicyRepository.Stored(scope.team(), scope.environment(), old + 1, document, p.mode(), now,
                caller.kind().wire, caller.id(), caller.name(), restoredFrom);
            JsonObject details = new JsonObject().put("old_version", old).put("new_version", old + 1).put("mode", p.mode())
                .put("tests", (Integer) checked[1]);
            if (restoredFrom != null) details.put("restored_from", restoredFrom);
            // the change log carries the document to every replica's ingress book, which sends it to the ingress nodes
            JsonObject entry = new JsonObject().put("team", scope.team()).put("environment", scope.environment()).put("version", old + 1)
                .put("mode", p.mode()).put("policy", new JsonObject(document));
            return WafPolicyRepository.insert(tx, s)
                .compose(x -> ChangeLog.append(tx, "waf", entry))
                .compose(seq -> audit.success(tx, caller, request, restoredFrom == null ? "waf.update" : "waf.rollback", "waf", scope.group(),
                    scope.team(), scope.environment(), details)
                    .map(x -> new Object[] {toJson(scope, s).put("tests", new JsonObject().put("passed", (Integer) checked[1])), seq}));
          }));
    }).compose(done -> {
      // every replica is told; this one has applied it before the answer (read-your-writes, as the ingress routes)
      changes.announce();
      return changes.applied((Long) done[1]).map(v -> (JsonObject) done[0]);
    });
  }

  private static Refusal stale(WafPolicyRepository.Stored current, long ifMatch) {
    long old = current == null ? 0 : current.version();
    return old == ifMatch ? null : Refusal.conflict("the traffic policy is at version " + old + ", not " + ifMatch + ": read it again");
  }

  private static String failure(Waf.TestResult r) {
    Waf.Decision d = r.got();
    return "test '" + r.name() + "': expected " + r.expect() + (r.rule() == null ? "" : " by rule " + r.rule()) + ", got " + d.outcome()
        + (d.rule().isEmpty() ? "" : " by rule " + d.rule()) + (d.matched().isEmpty() ? "" : " (matched: " + String.join(", ", d.matched()) + ")");
  }

  /**
   * A candidate document against sample requests, storing nothing: each sample's decision under the
   * current version and under the candidate, which of them differ, and the candidate's own tests.
   */
  Future<JsonObject> preview(Caller caller, Scope scope, String candidate, String given) {
    inside(caller, scope);
    // no samples given: the ones the ingress nodes reported, as requests
    Future<String> chosen = given != null ? Future.succeededFuture(given) : recent(caller, scope).map(WafSamples::asRequests);
    return chosen.compose(samples -> policies.current(scope.team(), scope.environment()).compose(current -> work.submit(caller.id(), scope.group(), WORK, deadline -> {
      Waf.Policy next;
      try {
        next = Waf.compile(candidate);
      } catch (Refusal r) {
        throw Refusal.invalid(r.errors().stream().map(e -> new Refusal.FieldError("policy." + e.field(), e.message())).toList());
      }
      List<Waf.Sample> list = Waf.samples(samples, MAX_SAMPLES);
      Waf.Policy now = current == null ? null : Waf.compile(current.document());
      deadline.check();
      JsonArray out = new JsonArray();
      int changed = 0;
      for (int i = 0; i < list.size(); i++) {
        Waf.Sample s = list.get(i);
        Waf.Decision a = now == null ? null : now.evaluate(s.request(), s.route());
        Waf.Decision b = next.evaluate(s.request(), s.route());
        boolean differs = a == null ? !"pass".equals(b.outcome()) : !a.outcome().equals(b.outcome()) || !a.rule().equals(b.rule());
        if (differs) changed++;
        out.add(new JsonObject().put("index", i).put("route", s.route()).put("current", a == null ? null : decision(a)).put("candidate", decision(b))
            .put("changed", differs));
        if (i % 16 == 15) deadline.check();
      }
      JsonArray tests = new JsonArray();
      for (Waf.TestResult r : next.test()) {
        tests.add(new JsonObject().put("name", r.name()).put("passed", r.passed()).put("expect", r.expect()).put("rule", r.rule())
            .put("got", decision(r.got())));
      }
      return new JsonObject().put("team", scope.team()).put("environment", scope.environment())
          .put("current_version", current == null ? 0 : current.version()).put("mode", next.mode()).put("samples", out).put("changed", changed)
          .put("tests", tests).put("samples_from", given == null ? "ingress_nodes" : "request");
    })));
  }

  /**
   * The samples of denied (and shadow-denied) requests the ingress nodes of the team+environment
   * reported, newest first, at most {@value WafSamples#MAX} (API.md §20, "Samples"). Which nodes serve the
   * routes is found on this feature's pool (it walks the replica's book of nodes); their reports are read
   * from the live state.
   */
  Future<JsonObject> samples(Caller caller, Scope scope) {
    inside(caller, scope);
    return recent(caller, scope).map(list -> new JsonObject().put("team", scope.team()).put("environment", scope.environment())
        .put("samples", list));
  }

  private Future<JsonArray> recent(Caller caller, Scope scope) {
    return work.submit(caller.id(), scope.group(), "traffic policy samples", deadline -> edges.nodes(scope.team(), scope.environment(), WafSamples.NODES))
        .compose(ids -> ids.isEmpty() ? Future.succeededFuture(java.util.Map.<String, String>of()) : edges.reports(new java.util.HashSet<>(ids)))
        .map(WafSamples::newestFirst);
  }

  static JsonObject decision(Waf.Decision d) {
    return new JsonObject().put("outcome", d.outcome()).put("status", d.status() == 0 ? null : d.status()).put("rule", d.rule().isEmpty() ? null : d.rule())
        .put("matched", new JsonArray(new ArrayList<>(d.matched()))).put("errors", new JsonArray(new ArrayList<>(d.errors())));
  }

  static JsonObject toJson(Scope scope, WafPolicyRepository.Stored s) {
    JsonObject j = new JsonObject().put("team", scope.team()).put("environment", scope.environment()).put("version", s == null ? 0 : s.version())
        .put("mode", s == null ? "enforce" : s.mode()).put("policy", s == null ? new JsonObject() : new JsonObject(s.document()));
    if (s != null) {
      j.put("created_at", s.createdAt().toString())
          .put("created_by", new JsonObject().put("type", s.actorType()).put("id", s.actorId()).put("name", s.actorName()))
          .put("restored_from", s.restoredFrom());
    }
    return j;
  }

  static JsonObject summary(WafPolicyRepository.Stored s) {
    return new JsonObject().put("version", s.version()).put("mode", s.mode()).put("created_at", s.createdAt().toString())
        .put("created_by", new JsonObject().put("type", s.actorType()).put("id", s.actorId()).put("name", s.actorName()))
        .put("restored_from", s.restoredFrom());
  }
}
