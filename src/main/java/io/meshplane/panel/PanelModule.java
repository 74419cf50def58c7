package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.access.Authenticator;
import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.core.json.JsonArray;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The web panel as a module (API.md §17): people, their sessions and the panel's own routes. It adds
 * sessions, not logic: the panel API ({@code /api/v1}) mounts every other module's routes too, with
 * {@link #authenticator()} as the way in, so nodes, operations, tokens, policy, audit and events are
 * the same services under the same permission table as on {@code /v1}. Its own routes: the session
 * (login, read, logout), single sign-on with an OpenID Connect identity provider, users (admins), and
 * the overview.
 */
public final class PanelModule implements Module {
  /** The cookie's name: the {@code __Host-} prefix (Secure, Path=/, no Domain, enforced by browsers) when the cookie is Secure. */
  static final String SECURE_COOKIE = "__Host-meshplane_session";
  static final String PLAIN_COOKIE = "meshplane_session";
  private static final long SESSION_GAUGE_MS = 10_000;
  private final java.util.concurrent.atomic.AtomicLong gaugeRefreshes = new java.util.concurrent.atomic.AtomicLong();

  /** How many nodes of a boundary drift from their policy now, and the ids of the first few (the policy feature's answer). */
  public record Drift(int count, List<String> first) {}

  /**
   * What the overview reads from the other features, handed in by the wiring point (the panel imports
   * none of them).
   *
   * @param nodeCounts {@code {total, online, stale, pending}} of the caller's boundary
   * @param meshCounts the same for the whole mesh (the series sampler, on the oldest replica only)
   * @param staleFirst the caller's N nodes that went stale last ({@code {id, name, team, environment, heartbeat}})
   * @param operationsInFlight operations pending or delivered in the caller's boundary
   * @param drifting nodes of a boundary drifting from their policy, and the first N ids
   * @param nodeBriefs {@code {id, name, team, environment, heartbeat}} of these nodes, in the caller's boundary
   * @param heartbeatsHandled heartbeats this replica accepted since it started
   * @param operationsClosed operations this replica closed since it started: succeeded, failed, expired
   */
  public record Sources(Function<Caller, Future<JsonObject>> nodeCounts, Supplier<Future<JsonObject>> meshCounts,
      BiFunction<Caller, Integer, Future<JsonArray>> staleFirst, Function<Caller, Future<Long>> operationsInFlight,
      BiFunction<Boundary, Integer, Future<Drift>> drifting, BiFunction<Caller, List<String>, Future<JsonArray>> nodeBriefs,
      LongSupplier heartbeatsHandled, Supplier<long[]> operationsClosed, long heartbeatIntervalSeconds) {}

  private final Vertx vertx;
  private final Cursors cursors;
  private final PanelSettings settings;
  private final Sources sources;
  private final PanelMetrics metrics;
  private final Passwords passwords;
  private final Sessions sessions;
  private final RateLimits limits;
  private final UserService users;
  private final SessionService logins;
  private final SeriesSampler series;
  private final String cookieName;
  private final SessionAuthenticator authenticator;
  private final OidcProvider oidcProvider;
  private final OidcService oidc;
  private long gaugeTimer = -1;

  public PanelModule(Vertx vertx, HazelcastInstance hz, Pool pool, AuditLog audit, MeshMetrics meshMetrics, Cursors cursors,
      PanelSettings settings, Sources sources) {
    this.vertx = vertx;
    this.cursors = cursors;
    this.settings = settings;
    this.sources = sources;
    this.metrics = new PanelMetrics(meshMetrics.registry());
    this.passwords = new Passwords(vertx);
    this.sessions = new Sessions(vertx, hz, settings.sessionIdle(), settings.sessionLifetime());
    this.limits = new RateLimits(vertx, hz, settings);
    this.users = new UserService(pool, new UserRepository(pool), passwords, sessions, audit);
    this.logins = new SessionService(users, sessions, limits, metrics);
    this.series = new SeriesSampler(vertx, hz, new SeriesSampler.Figures() {
      @Override
      public long heartbeats() {
        return sources.heartbeatsHandled().getAsLong();
      }

      @Override
      public long[] operationsClosed() {
        return sources.operationsClosed().get();
      }

      @Override
      public Future<JsonObject> meshCounts() {
        return sources.meshCounts().get();
      }
    }, settings.seriesInterval());
    this.cookieName = settings.cookieSecure() ? SECURE_COOKIE : PLAIN_COOKIE;
    this.authenticator = new SessionAuthenticator(sessions, limits, metrics, cookieName);
    this.oidcProvider = new OidcProvider(vertx, settings.oidc());
    this.oidc = new OidcService(settings.oidc(), oidcProvider, new OidcPending(vertx, hz),
        new OidcUsers(pool, new UserRepository(pool), sessions, audit), sessions, limits, metrics);
  }

  /** How many samples of the overview's series this replica has published (tests wait on it instead of sleeping). */
  public long seriesSamples() {
    return series.samples();
  }

  /** How many times this replica has refreshed its sessions gauge (tests wait on it instead of sleeping). */
  public long sessionGaugeRefreshes() {
    return gaugeRefreshes.get();
  }

  @Override
  public String name() {
    return "panel";
  }

  @Override
  public Future<Void> start() {
    series.start();
    // in the background: an identity provider that cannot be reached does not hold the replica's start
    oidcProvider.start();
    gaugeTimer = vertx.setPeriodic(SESSION_GAUGE_MS, t -> vertx.executeBlocking(sessions::localCount, false)
        .onSuccess(n -> {
          metrics.sessions.set(n);
          gaugeRefreshes.incrementAndGet();
        }));
    return Future.succeededFuture();
  }

  @Override
  public void routes(Api api) {
    if (api.forMachines()) return;
    SessionRoutes.mount(api, logins, users, sessions, settings, cookieName);
    OidcRoutes.mount(api, oidc, settings, cookieName);
    UserRoutes.mount(api, users, cursors);
    OverviewRoutes.mount(api, sources, series);
  }

  @Override
  public Future<Void> stop() {
    vertx.cancelTimer(gaugeTimer);
    oidcProvider.stop();
    series.stop();
    passwords.close();
    return Future.succeededFuture();
  }

  /** The panel's way in: a session cookie, with CSRF on mutating requests and a rate per session. */
  public Authenticator authenticator() {
    return authenticator;
  }

  public UserService users() {
    return users;
  }
}
