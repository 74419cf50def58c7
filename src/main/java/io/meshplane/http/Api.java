package io.meshplane.http;

import io.meshplane.access.Authenticator;
import io.meshplane.access.Caller;
import io.meshplane.access.Denials;
import io.meshplane.access.Permission;
import io.meshplane.access.Refused;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * One API surface (the coordinator's {@code /v1} for machines; the panel's {@code /api/v1} for people),
 * with its way in: the only way for a feature to put a route on a router. Features declare their
 * routes once, with paths relative to the API ({@code /nodes/{id}}), and each API mounts them under
 * its prefix with its {@link Authenticator}. Every route names the permission it needs (or,
 * explicitly, that any authenticated caller will do); the guard authenticates, resolves the
 * {@link Caller} once, checks the permission against the caller's row of the one grants table,
 * audits a denial, and only then calls the handler. Features are handed this object, never the
 * router, so an unguarded route cannot be written.
 */
public final class Api {
  /** A route's logic. It ends the response itself; a failed future (or a throw) goes to the failure handler. */
  @FunctionalInterface
  public interface Handler {
    Future<?> handle(RoutingContext ctx, Caller caller);
  }

  /**
   * What a route requires: {@code permission} null means "any authenticated caller" (whoami, the
   * panel's own session), and {@code open} a route without a credential at all (the panel's login).
   * {@code path} is the full path; {@code query} the query parameters it takes (any other is a 400).
   */
  public record Declared(String api, HttpMethod method, String path, Permission permission, String action, String targetType,
      boolean open, Query query) {}

  private final Router router;
  private final String name;
  private final String prefix;
  private final boolean machines;
  private final Authenticator authenticator;
  private final Denials denials;
  private final List<Declared> declared = new ArrayList<>();
  private final Set<Route> mounted = Collections.newSetFromMap(new IdentityHashMap<>());

  /**
   * @param name the API's name in tests and docs ({@code coordinator}, {@code panel})
   * @param prefix the path every route of this API lives under ({@code /v1})
   * @param machines true for the API that node agents and scripts use (machine-only routes such as the
   *     heartbeat are mounted there only)
   */
  public Api(Router router, String name, String prefix, boolean machines, Authenticator authenticator, Denials denials) {
    this.router = router;
    this.name = name;
    this.prefix = prefix;
    this.machines = machines;
    this.authenticator = authenticator;
    this.denials = denials;
  }

  /**
   * @param path relative to the API, in the contract's syntax: {@code /auth/tokens/{id}}
   * @param action the audit action recorded when a call is denied (and by the handler on success)
   * @param targetType the audit target type of the {@code {id}} path parameter, or null
   */
  public void route(HttpMethod method, String path, Permission permission, String action, String targetType, Handler handler) {
    route(method, path, permission, action, targetType, Query.NONE, handler);
  }

  /** A route that takes the query parameters {@code query} (and no other: 400 naming each unknown one). */
  public void route(HttpMethod method, String path, Permission permission, String action, String targetType, Query query,
      Handler handler) {
    if (permission == null) throw new IllegalArgumentException(method + " " + path + " must declare a permission");
    add(new Declared(name, method, prefix + path, permission, action, targetType, false, query), handler);
  }

  /**
   * A route any authenticated caller may call, whatever its grants: {@code whoami}, and the panel's
   * own session (read it, log out).
   */
  public void anyCaller(HttpMethod method, String path, String action, Handler handler) {
    add(new Declared(name, method, prefix + path, null, action, null, false, Query.NONE), handler);
  }

  /**
   * A route that takes no credential: the panel's login, the one way to get one. The handler gets a
   * null caller and does its own checks (the login's rate limits); it is declared like every other
   * route, so the permission matrix lists it.
   */
  public void open(HttpMethod method, String path, String action, Handler handler) {
    open(method, path, action, Query.NONE, handler);
  }

  /** The same, taking the query parameters {@code query} (single sign-on's callback: the IdP's answer comes in the query). */
  public void open(HttpMethod method, String path, String action, Query query, Handler handler) {
    open(method, path, action, query, handler, null);
  }

  /**
   * The same, for a browser's top-level navigation (single sign-on's callback): a query the route
   * does not take is handed to {@code refused} (a redirect to a page that explains it) instead of
   * being answered with a JSON problem nobody would read.
   */
  public void open(HttpMethod method, String path, String action, Query query, Handler handler,
      java.util.function.Consumer<RoutingContext> refused) {
    Declared d = new Declared(name, method, prefix + path, null, action, null, true, query);
    declared.add(d);
    mounted.add(router.route(d.method(), routePath(d)).handler(ctx -> {
      try {
        try {
          d.query().check(ctx);
        } catch (Refusal r) {
          if (refused == null) throw r;
          refused.accept(ctx);
          return;
        }
        handler.handle(ctx, null).onFailure(ctx::fail);
      } catch (RuntimeException e) {
        ctx.fail(e);
      }
    }));
  }

  private void add(Declared d, Handler handler) {
    declared.add(d);
    mounted.add(router.route(d.method(), routePath(d)).handler(ctx -> guard(ctx, d, handler)));
  }

  private static String routePath(Declared d) {
    return d.path().replaceAll("\\{([a-z_]+)}", ":$1");
  }

  private void guard(RoutingContext ctx, Declared d, Handler handler) {
    try {
      d.query().check(ctx); // the request's shape, like the target's own checks: before any credential is looked at
    } catch (Refusal r) {
      ctx.fail(r);
      return;
    }
    Future<Caller> authenticated;
    try {
      authenticated = authenticator.authenticate(ctx.request());
    } catch (RuntimeException e) {
      authenticated = Future.failedFuture(e);
    }
    authenticated.onComplete(ar -> {
      if (ar.failed()) {
        if (ar.cause() instanceof Refused known) {
          // the way in knew the caller and refused the request (the panel's CSRF check): on the record
          deny(ctx, d, known.caller(), known.refusal(), false).onFailure(ctx::fail);
          return;
        }
        if (ar.cause() instanceof Refusal r && "token_revoked".equals(r.code())) {
          // a revoked credential that can still be named: its attempts are audited (once per window)
          Caller known = authenticator.attributable(ctx.request());
          if (known != null) {
            deny(ctx, d, known, r, true).onFailure(ctx::fail);
            return;
          }
        }
        ctx.fail(ar.cause());
        return;
      }
      Caller caller = ar.result();
      if (d.permission() != null && !caller.may(d.permission())) {
        deny(ctx, d, caller, Refusal.forbidden("the " + caller.grants().name() + " " + caller.grants().kind() + " does not grant "
            + d.permission().wire), false).onFailure(ctx::fail);
        return;
      }
      try {
        handler.handle(ctx, caller).onFailure(ctx::fail);
      } catch (RuntimeException e) {
        ctx.fail(e);
      }
    });
  }

  private Future<Void> deny(RoutingContext ctx, Declared d, Caller caller, Refusal refusal, boolean repeatable) {
    // the path's id is recorded only when it has the shape of an id: the audit trail never stores what
    // an attacker typed into a path (up to 4 KiB of anything)
    String id = d.targetType() == null ? null : ctx.pathParam("id");
    String target = Ids.wellFormed(id) ? id : null;
    return denials.refuse(caller, request(ctx), d.action(), target == null ? null : d.targetType(), target, refusal, repeatable);
  }

  /**
   * Records a refusal of {@code caller} in the audit trail and fails with it: for handlers' own rules.
   *
   * @param repeatable true for a denial a machine repeats on its own schedule (audited once per window)
   */
  public <T> Future<T> refuse(RoutingContext ctx, Caller caller, String action, String targetType, String targetId, Refusal refusal,
      boolean repeatable) {
    return denials.refuse(caller, request(ctx), action, targetType, targetId, refusal, repeatable);
  }

  /** What a service needs of the request: its id and source address (behind trusted proxies, the client's: {@link ClientAddresses}). */
  public static RequestInfo request(RoutingContext ctx) {
    return new RequestInfo(RequestIds.of(ctx), ClientAddresses.of(ctx));
  }

  /** The full path of something under this API, for {@code Location} headers: {@code location("/nodes/nd_…")}. */
  public String location(String relative) {
    return prefix + relative;
  }

  public String name() {
    return name;
  }

  public String prefix() {
    return prefix;
  }

  public boolean forMachines() {
    return machines;
  }

  /** Every route declared on this API, for the permission-matrix test and the docs. */
  public List<Declared> declared() {
    return Collections.unmodifiableList(declared);
  }

  /** True when this API put {@code route} on the router (so it is guarded). */
  public boolean mounted(Route route) {
    return mounted.contains(route);
  }
}
