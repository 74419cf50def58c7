package io.meshplane.ingress;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.time.Instant;
import java.util.List;

/**
 * Ingress routes (API.md §19) on values: create, replace, delete and read, scoped by the caller's
 * boundary. A change checks its target (a node of the same team+environment with that bound service)
 * and asks the policy feature whether the route's ingress tag may reach it ({@link IngressModule.Reach},
 * on the policy's preview pool), then, in one transaction that takes the change log's clock lock first,
 * checks again what the evaluation assumed (the policy version, the target's service), the
 * {@code If-Match} version, the hostname's owning team and the rule's uniqueness, writes the route
 * and the dense positions, bumps the team+environment's version, appends the whole route set to the
 * change log and records the audit event.
 */
final class IngressService {
  /** Routes per team+environment at most: the change log entry and an ingress node's answer stay small. */
  static final int MAX_ROUTES = 500;
  /** Evaluations of one change before it gives up on a policy that keeps changing. */
  static final int ATTEMPTS = 3;

  /** A validated route as a request gives it; {@code position} null: at the end (create) or where it is (replace). */
  record Spec(String team, String environment, Integer position, String hostname, String pathPrefix, String targetNode, String targetService,
      String exposure, String tls, String ingressTag) {}

  private final IngressRepository routes;
  private final AuditLog audit;
  private final ChangeLog.Feed changes;
  private final IngressModule.Reach reach;

  IngressService(IngressRepository routes, AuditLog audit, ChangeLog.Feed changes, IngressModule.Reach reach) {
    this.routes = routes;
    this.audit = audit;
    this.changes = changes;
    this.reach = reach;
  }

  /** The policy changed between the evaluation and the lock: evaluate again. */
  private static final class Moved extends RuntimeException {
    Moved() {
      super(null, null, false, false);
    }
  }

  /** A route, the version of its team+environment's routes after the change, and the change's seq (0 for a read). */
  record Done(IngressRepository.Route route, long version, long seq) {}

  Future<Done> create(Caller caller, RequestInfo request, Spec spec) {
    if (!caller.boundary().covers(spec.team(), spec.environment())) {
      return audit.refuse(caller, request, "ingress.route.create", "ingress_route", null,
          Refusal.forbidden("cannot create a route outside your team and environment"), false);
    }
    return change(caller, request, spec, null, null, "ingress.route.create", 1);
  }

  Future<Done> replace(Caller caller, RequestInfo request, String id, Spec spec, Long ifMatch) {
    return visible(caller, routes.pool(), id).compose(old -> {
      if (!old.team().equals(spec.team()) || !old.environment().equals(spec.environment())) {
        return Future.failedFuture(Refusal.invalid(old.team().equals(spec.team()) ? "environment" : "team",
            "a route stays in its team and environment (" + old.team() + "/" + old.environment() + "): create a new one there"));
      }
      return change(caller, request, spec, id, ifMatch, "ingress.route.update", 1);
    });
  }

  Future<Done> delete(Caller caller, RequestInfo request, String id, Long ifMatch) {
    return routes.pool().withTransaction(tx -> ChangeLog.lock(tx).compose(v -> visible(caller, tx, id)).compose(old ->
        matches(tx, old.team(), old.environment(), ifMatch).compose(x -> routes.all(tx, old.team(), old.environment())).compose(all ->
            routes.delete(tx, id)
                .compose(x -> routes.shift(tx, old.team(), old.environment(), old.position() + 1, all.size(), -1))
                .compose(x -> commit(tx, caller, request, "ingress.route.delete", old, old.team(), old.environment())))))
        .compose(this::applied);
  }

  Future<Done> get(Caller caller, String id) {
    return visible(caller, routes.pool(), id).compose(r -> routes.version(r.team(), r.environment()).map(v -> new Done(r, v, 0)));
  }

  /** A page in (team, environment, position) order inside the caller's boundary and the filters. */
  Future<Buffer> list(Caller caller, String team, String env, String hostname, Page page) {
    String t = team != null ? team : caller.team();
    String e = env != null ? env : caller.environment();
    if (!caller.boundary().covers(t.equals("*") ? caller.team() : t, e.equals("*") ? caller.environment() : e)) {
      // a filter outside the caller's boundary selects nothing it may see
      return page.render(List.<IngressRepository.Route>of(), IngressService::toJson, r -> List.of());
    }
    List<String> after = page.after() == null ? null : List.of(page.afterPart(0), page.afterPart(1), page.afterPart(2));
    if (after != null && !after.get(2).chars().allMatch(Character::isDigit)) throw Refusal.invalid("cursor", "is not a cursor this API returned for this list");
    return routes.list(t, e, hostname, after, page.fetch()).compose(rows -> page.render(rows, IngressService::toJson,
        r -> List.of(r.team(), r.environment(), Integer.toString(r.position()))));
  }

  /** The version of one team+environment's routes (the list's ETag). */
  Future<Long> version(String team, String env) {
    return routes.version(team, env);
  }

  /** A route inside the caller's boundary, or 404 (what lies outside does not exist for the caller). */
  private Future<IngressRepository.Route> visible(Caller caller, SqlClient client, String id) {
    if (!Ids.looksLike("ir", id)) return Future.failedFuture(Refusal.notFound("no ingress route " + id));
    return routes.get(client, id).compose(r -> r == null || !caller.boundary().covers(r.team(), r.environment())
        ? Future.failedFuture(Refusal.notFound("no ingress route " + id)) : Future.succeededFuture(r));
  }

  private Future<Done> change(Caller caller, RequestInfo request, Spec spec, String id, Long ifMatch, String action, int attempt) {
    return target(routes.pool(), spec).compose(port -> reach.check(caller, spec.team(), spec.environment(), spec.ingressTag(),
        spec.targetNode(), "tcp", port).compose(verdict -> {
          String missing = verdict.getString("missing");
          if (missing != null) {
            return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "policy_blocks", missing,
                List.of(new Refusal.FieldError("ingress_tag", missing))));
          }
          long policyVersion = verdict.getLong("policy_version");
          return routes.pool().withTransaction(tx -> ChangeLog.lock(tx)
              .compose(v -> policyVersion(tx, spec)).compose(pv -> pv != policyVersion ? Future.<Integer>failedFuture(new Moved()) : target(tx, spec))
              .compose(p -> p != port.intValue() ? Future.<Done>failedFuture(new Moved()) : write(tx, caller, request, spec, id, ifMatch, action)));
        }))
        .compose(this::applied)
        .recover(t -> {
          if (!(t instanceof Moved)) return Future.failedFuture(t);
          if (attempt < ATTEMPTS) return change(caller, request, spec, id, ifMatch, action, attempt + 1);
          return Future.failedFuture(Refusal.unavailable("busy", "the policy or the target of " + spec.team() + "/" + spec.environment()
              + " changed during each of " + ATTEMPTS + " checks of the route; retry", 2));
        });
  }

  /** The port of the target's bound service; 400 naming the field when the node or the service is not there. */
  private Future<Integer> target(SqlClient client, Spec spec) {
    return routes.node(client, spec.targetNode()).compose(n -> {
      if (n == null || !n.team().equals(spec.team()) || !n.environment().equals(spec.environment())) {
        return Future.failedFuture(Refusal.invalid("target.node", "names no node of " + spec.team() + "/" + spec.environment()));
      }
      int port = IngressBook.port(n.services(), spec.targetService());
      if (port <= 0) {
        return Future.failedFuture(Refusal.invalid("target.service", "node " + n.name() + " has no bound service " + spec.targetService()
            + " (bound: " + (n.services().length == 0 ? "none" : String.join(", ", n.services())) + "; PUT /v1/nodes/" + n.id() + "/services)"));
      }
      return Future.succeededFuture(port);
    });
  }

  private static Future<Long> policyVersion(SqlClient tx, Spec spec) {
    return tx.preparedQuery("SELECT COALESCE(max(version), 0) FROM acl_policies WHERE team = $1 AND environment = $2")
        .execute(io.vertx.sqlclient.Tuple.of(spec.team(), spec.environment())).map(rows -> rows.iterator().next().getLong(0));
  }

  /** Under the clock's lock: the version, the hostname's team, uniqueness and position checks, then the write. */
  private Future<Done> write(SqlClient tx, Caller caller, RequestInfo request, Spec spec, String id, Long ifMatch, String action) {
    String team = spec.team();
    String env = spec.environment();
    Future<IngressRepository.Route> old = id == null ? Future.succeededFuture(null) : visible(caller, tx, id);
    return old.compose(was -> matches(tx, team, env, ifMatch).compose(v -> routes.otherOwner(tx, spec.hostname(), team)).compose(owner -> {
      if (owner != null) {
        return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "hostname_taken", "hostname " + spec.hostname()
            + " is held by another team", List.of(new Refusal.FieldError("hostname", "is held by another team"))));
      }
      return routes.all(tx, team, env);
    }).compose(all -> {
      for (IngressRepository.Route r : all) {
        if (!r.id().equals(id) && r.hostname().equals(spec.hostname()) && r.pathPrefix().equals(spec.pathPrefix())
            && r.ingressTag().equals(spec.ingressTag())) {
          return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "duplicate_route", "route " + r.id() + " already sends "
              + spec.hostname() + spec.pathPrefix() + " on " + spec.ingressTag(), List.of(new Refusal.FieldError("path_prefix",
              "route " + r.id() + " has the same hostname, path prefix and ingress tag"))));
        }
      }
      int n = all.size() + (was == null ? 1 : 0);
      if (was == null && n > MAX_ROUTES) {
        return Future.failedFuture(Refusal.invalid("team", "has " + MAX_ROUTES + " routes in " + team + "/" + env + ", the most it may"));
      }
      int position = spec.position() == null ? (was == null ? n : was.position()) : spec.position();
      if (position < 1 || position > n) return Future.failedFuture(Refusal.invalid("position", "must be between 1 and " + n));
      Instant now = Times.now();
      IngressRepository.Route route = new IngressRepository.Route(id == null ? Ids.next("ir") : id, team, env, position, spec.hostname(),
          spec.pathPrefix(), spec.targetNode(), spec.targetService(), spec.exposure(), spec.tls(), spec.ingressTag(),
          was == null ? now : was.createdAt(), now, "active"); // its target and service were checked above, under the lock
      Future<Void> moved;
      if (was == null) {
        moved = routes.shift(tx, team, env, position, all.size(), 1).compose(v -> routes.insert(tx, route));
      } else if (position < was.position()) {
        moved = routes.shift(tx, team, env, position, was.position() - 1, 1).compose(v -> routes.update(tx, route));
      } else {
        moved = routes.shift(tx, team, env, was.position() + 1, position, -1).compose(v -> routes.update(tx, route));
      }
      return moved.compose(v -> commit(tx, caller, request, action, route, team, env));
    }));
  }

  /** {@code If-Match}: the team+environment's routes version the client read (null: none sent). */
  private Future<Void> matches(SqlClient tx, String team, String env, Long ifMatch) {
    if (ifMatch == null) return Future.succeededFuture();
    return routes.version(tx, team, env).compose(v -> v == ifMatch.longValue() ? Future.<Void>succeededFuture()
        : Future.failedFuture(Refusal.conflict("the routes of " + team + "/" + env + " are at version " + v + ", not " + ifMatch
            + ": read them again")));
  }

  /** The new version, the whole route set in the change log, the audit event; {@link Done} with the seq to wait for. */
  private Future<Done> commit(SqlClient tx, Caller caller, RequestInfo request, String action, IngressRepository.Route route, String team,
      String env) {
    return routes.bump(tx, team, env).compose(version -> routes.all(tx, team, env).compose(all -> ChangeLog.append(tx, "ingress",
            new JsonObject().put("team", team).put("environment", env).put("version", version).put("routes", IngressRepository.entries(all))))
        .compose(seq -> audit.success(tx, caller, request, action, Target.of("ingress_route", route.id(), route.hostname() + route.pathPrefix()),
            team, env, new JsonObject().put("version", version).put("position", route.position())).map(x -> new Done(route, version, seq))));
  }

  /** After the commit: every replica is told, and this one has applied the change before the answer (read-your-writes). */
  private Future<Done> applied(Done done) {
    changes.announce();
    return changes.applied(done.seq()).map(v -> done);
  }

  static JsonObject toJson(IngressRepository.Route r) {
    return new JsonObject().put("id", r.id()).put("team", r.team()).put("environment", r.environment()).put("position", r.position())
        .put("hostname", r.hostname()).put("path_prefix", r.pathPrefix())
        .put("target", new JsonObject().put("node", r.targetNode()).put("service", r.targetService()))
        .put("exposure", r.exposure()).put("tls", r.tls()).put("ingress_tag", r.ingressTag())
        .put("status", new JsonObject().put("state", r.state()))
        .put("created_at", Times.format(r.createdAt())).put("updated_at", Times.format(r.updatedAt()));
  }
}
