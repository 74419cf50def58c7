package io.meshplane.meshca;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Permission;
import io.meshplane.audit.Actor;
import io.meshplane.common.Fields;
import io.meshplane.common.Refusal;
import io.meshplane.http.Api;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/**
 * The rotation's routes (docs/API.md, "MeshCA", rotation): the state with its preview, a start, an
 * advance and a rollback. {@code meshca:manage} in every team and environment: the CA is the whole
 * deployment's, so a caller scoped to one team may read it but not rotate it (403, audited).
 */
final class RotationRoutes {
  /** Finished rotations the state lists. */
  static final int HISTORY = 10;

  private RotationRoutes() {}

  static void mount(Api api, Rotations rotations, AutoRotation auto, OfflineIntermediates offline) {
    api.route(POST, "/meshca/intermediates/requests", Permission.MESHCA_MANAGE, "meshca.intermediate.request", "authority", (ctx, caller) -> {
      // no body needed; one sent must be a JSON object, its fields are ignored (as a re-key's)
      if (ctx.body().length() > 0) JsonBodies.required(ctx);
      return everywhere(api, ctx, caller, "meshca.intermediate.request").compose(v -> offline.request(Actor.of(caller), Api.request(ctx)))
          .map(out -> {
            Responses.json(ctx, 201, out);
            return null;
          });
    });
    api.route(POST, "/meshca/intermediates", Permission.MESHCA_MANAGE, "meshca.rotation.start", "rotation", (ctx, caller) -> {
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      String certificate = f.string(body, "certificate", "certificate");
      String root = body.containsKey("root") ? f.string(body, "root", "root") : null;
      for (String k : body.fieldNames()) if (!k.equals("certificate") && !k.equals("root")) f.error(k, "is not a field here (certificate, root)");
      f.check();
      return everywhere(api, ctx, caller, "meshca.rotation.start")
          .compose(v -> offline.upload(Actor.of(caller), Api.request(ctx), certificate, root))
          .compose(r -> rotations.preview(r).map(p -> {
            Responses.json(ctx, 201, r.json().put("preview", p));
            return null;
          }));
    });
    api.route(GET, "/meshca/rotation", Permission.MESHCA_READ, "meshca.read", "rotation", (ctx, caller) ->
        rotations.state(HISTORY).map(state -> {
          Responses.ok(ctx, state.put("automatic", auto.state()));
          return null;
        }));
    api.route(POST, "/meshca/rotations", Permission.MESHCA_MANAGE, "meshca.rotation.start", "rotation", (ctx, caller) -> {
      JsonObject body = JsonBodies.required(ctx);
      Fields f = new Fields();
      String kind = f.string(body, "kind", "kind");
      if (kind != null && !kind.equals("intermediate") && !kind.equals("root")) f.error("kind", "must be intermediate or root");
      for (String k : body.fieldNames()) if (!k.equals("kind")) f.error(k, "is not a field of a rotation (only kind)");
      f.check();
      return everywhere(api, ctx, caller, "meshca.rotation.start").compose(v -> rotations.start(Actor.of(caller), Api.request(ctx), kind, false))
          .compose(r -> rotations.preview(r).map(p -> {
            Responses.json(ctx, 201, r.json().put("preview", p));
            return null;
          }));
    });
    step(api, rotations, "advance", "meshca.rotation.advance");
    step(api, rotations, "rollback", "meshca.rotation.rollback");
  }

  private static void step(Api api, Rotations rotations, String what, String action) {
    api.route(POST, "/meshca/rotations/{id}/" + what, Permission.MESHCA_MANAGE, action, "rotation", (ctx, caller) -> {
      String id = ctx.pathParam("id");
      JsonObject body = ctx.body().length() == 0 ? new JsonObject() : JsonBodies.required(ctx);
      Fields f = new Fields();
      String phase = body.containsKey("phase") ? f.string(body, "phase", "phase") : null;
      if (phase != null && !Rotations.PHASES.contains(phase)) f.error("phase", "must be one of " + String.join(", ", Rotations.PHASES));
      for (String k : body.fieldNames()) if (!k.equals("phase")) f.error(k, "is not a field here (only phase: the phase you saw)");
      f.check();
      return everywhere(api, ctx, caller, action).compose(v -> "advance".equals(what)
          ? rotations.advance(Actor.of(caller), Api.request(ctx), id, phase)
          : rotations.rollback(Actor.of(caller), Api.request(ctx), id, phase))
          .compose(r -> rotations.preview(r).map(p -> {
            Responses.ok(ctx, r.json().put("preview", p));
            return null;
          }));
    });
  }

  /** A rotation changes what every team trusts: only a caller whose boundary is every team and environment may. */
  private static Future<Void> everywhere(Api api, RoutingContext ctx, Caller caller, String action) {
    if (Boundary.EVERYTHING.equals(caller.boundary())) return Future.succeededFuture();
    // the permission is held, the boundary does not cover the deployment's CA: 403 out_of_scope (not forbidden: the surface may)
    return api.refuse(ctx, caller, action, "rotation", null, new Refusal(Refusal.Kind.FORBIDDEN, "out_of_scope", "a CA rotation changes what every team trusts: it needs "
        + "meshca:manage in every team and environment (this credential is scoped to " + caller.boundary().team() + "/"
        + caller.boundary().environment() + ")"), true);
  }
}
