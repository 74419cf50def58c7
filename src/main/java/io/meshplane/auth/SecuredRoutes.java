package io.meshplane.auth;

import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Refusal;
import io.meshplane.common.Ids;
import io.vertx.core.Future;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The only way to put a route on the coordinator API. Every route declares the permission it needs (or,
 * explicitly, that any valid token will do); the guard authenticates the bearer token, checks the
 * permission, audits a denial, and only then calls the handler with the verified {@link Principal}.
 * Features are handed this object, never the Vert.x Router, so an unguarded {@code /v1} route cannot be
 * written.
 */
public final class SecuredRoutes {
  /** A route's logic. It ends the response itself; a failed future (or a throw) goes to the failure handler. */
  @FunctionalInterface
  public interface ApiHandler {
    Future<?> handle(RoutingContext ctx, Principal caller);
  }

  /** What a route requires: {@code permission} null means "any valid token" (whoami). */
  public record Declared(HttpMethod method, String path, Permission permission, String action, String targetType) {}

  private final Router router;
  private final TokenVerifier verifier;
  private final AuditLog audit;
  private final List<Declared> declared = new ArrayList<>();

  public SecuredRoutes(Router router, TokenVerifier verifier, AuditLog audit) {
    this.router = router;
    this.verifier = verifier;
    this.audit = audit;
  }

  /**
   * @param path in the contract's syntax, {@code /v1/auth/tokens/{id}}
   * @param action the audit action recorded when a call is denied (and by the handler on success)
   * @param targetType the audit target type of the {@code {id}} path parameter, or null
   */
  public void route(HttpMethod method, String path, Permission permission, String action, String targetType, ApiHandler handler) {
    if (permission == null) throw new IllegalArgumentException(method + " " + path + " must declare a permission");
    add(new Declared(method, path, permission, action, targetType), handler);
  }

  /** A route any valid token may call, whatever its surface (only {@code whoami} is meant to be one). */
  public void anyValidToken(HttpMethod method, String path, String action, ApiHandler handler) {
    add(new Declared(method, path, null, action, null), handler);
  }

  private void add(Declared d, ApiHandler handler) {
    declared.add(d);
    router.route(d.method(), d.path().replaceAll("\\{([a-z_]+)}", ":$1")).handler(ctx -> guard(ctx, d, handler));
  }

  private void guard(RoutingContext ctx, Declared d, ApiHandler handler) {
    String authorization = ctx.request().getHeader(HttpHeaders.AUTHORIZATION);
    Future<Principal> verified;
    try {
      verified = verifier.verifyHeader(authorization);
    } catch (RuntimeException e) {
      verified = Future.failedFuture(e);
    }
    verified.onComplete(ar -> {
      if (ar.failed()) {
        if (ar.cause() instanceof Refusal e && "token_revoked".equals(e.code())) {
          Principal known = verifier.attributable(authorization);
          if (known != null) {
            audit.deniedRepeatable(denial(ctx, d, known)).onComplete(x -> ctx.fail(e));
            return;
          }
        }
        ctx.fail(ar.cause());
        return;
      }
      Principal caller = ar.result();
      if (d.permission() != null && !caller.may(d.permission())) {
        audit.denied(denial(ctx, d, caller)).onComplete(x -> ctx.fail(Refusal.forbidden(
            "the " + caller.scope().surface().wire + " surface does not grant " + d.permission().wire)));
        return;
      }
      try {
        handler.handle(ctx, caller).onFailure(ctx::fail);
      } catch (RuntimeException e) {
        ctx.fail(e);
      }
    });
  }

  private static AuditEvent denial(RoutingContext ctx, Declared d, Principal caller) {
    // the path's id is recorded only when it has the shape of an id: the audit trail never stores what
    // an attacker typed into a path (up to 4 KiB of anything)
    String id = d.targetType() == null ? null : ctx.pathParam("id");
    String target = Ids.wellFormed(id) ? id : null;
    return AuditLog.event(ctx, caller, d.action(), target == null ? null : d.targetType(), target, AuditEvent.DENIED,
        caller.scope().team(), caller.scope().environment());
  }

  /** Every route declared so far, for the permission-matrix test and the docs. */
  public List<Declared> declared() {
    return Collections.unmodifiableList(declared);
  }
}
