package io.meshplane.app;

import io.meshplane.common.Blocking;
import io.meshplane.http.Api;
import io.meshplane.http.ClientAddresses;
import io.meshplane.http.Dashboard;
import io.meshplane.http.HttpVerticle;
import io.meshplane.http.Routers;
import io.meshplane.module.Module;
import io.meshplane.observe.Observability;
import io.meshplane.observe.Readiness;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The replica's two HTTP components, the coordinator API and the web panel, as deployed: first with
 * what they serve before PostgreSQL has answered ({@link #deploy()}: probes, metrics, 503 for the
 * rest), then with every module's routes ({@link #install}). Keeps the mounted APIs for the tests that
 * check every route is guarded ({@link #apis()}, {@link #unguardedRoutes()}).
 */
final class HttpComponents {
  private static final Logger LOG = LoggerFactory.getLogger(HttpComponents.class);

  private final MeshConfig config;
  private final Vertx vertx;
  private final Observability observability;
  private final Readiness readiness;
  private final Buffer openApi;
  private final Set<Component> components;
  /** Whose X-Forwarded-For is believed ({@code http.trusted_proxies}). */
  private final ClientAddresses clients;
  /** True once the start has opened PostgreSQL (the starting routes then say "almost ready"). */
  private final BooleanSupplier databaseOpen;
  private final AtomicInteger coordinatorPort = new AtomicInteger();
  private final AtomicInteger panelPort = new AtomicInteger();
  private final List<HttpVerticle> coordinatorInstances = new ArrayList<>();
  private final List<HttpVerticle> panelInstances = new ArrayList<>();
  /** The coordinator API of one HTTP instance, kept for the tests that check every route is guarded. */
  private final AtomicReference<Routers.Mounted> coordinatorApi = new AtomicReference<>();
  private final AtomicReference<Routers.Mounted> panelApi = new AtomicReference<>();

  HttpComponents(MeshConfig config, Vertx vertx, Observability observability, Readiness readiness, Buffer openApi,
      Set<Component> components, BooleanSupplier databaseOpen) {
    this.config = config;
    this.vertx = vertx;
    this.observability = observability;
    this.readiness = readiness;
    this.openApi = openApi;
    this.components = components;
    this.clients = ClientAddresses.of(config.trustedProxies());
    this.databaseOpen = databaseOpen;
  }

  /** The first phase: deploys the components this replica runs, serving what needs no PostgreSQL. Blocking. */
  void deploy() {
    if (components.contains(Component.COORDINATOR)) {
      int port = deployHttp("coordinator API", config.httpPort(), coordinatorPort, this::startingRoutes, instances(), coordinatorInstances);
      LOG.info("coordinator API listening on {}:{}", config.httpHost(), port);
    }
    if (components.contains(Component.PANEL)) {
      int port = deployHttp("web panel", config.panelPort(), panelPort, this::panelStartingRoutes, 1, panelInstances);
      LOG.info("web panel listening on {}:{}", config.httpHost(), port);
    }
  }

  /** The second phase's end: every HTTP instance serves the modules' routes. */
  Future<Void> install(ReplicaModules features) {
    List<Future<Void>> installed = new ArrayList<>();
    for (HttpVerticle v : copy(coordinatorInstances)) installed.add(v.install(x -> coordinatorRoutes(x, features)));
    for (HttpVerticle v : copy(panelInstances)) installed.add(v.install(x -> panelRoutes(x, features)));
    return Future.all(installed).mapEmpty();
  }

  /**
   * One coordinator verticle per CPU core by default, not one per event loop (Vert.x makes 2 per
   * core): the other loops stay free for the PostgreSQL client and timers, and on 2 cores the
   * heartbeat benchmark ran faster with 2 instances than with 4 (fewer threads competing for them).
   */
  private int instances() {
    return config.httpInstances() > 0 ? config.httpInstances() : Runtime.getRuntime().availableProcessors();
  }

  /**
   * Deploys {@code instances} verticles sharing one port. Port 0 means "any free port" for the whole
   * component: Vert.x shares a random port among instances when asked for a negative port, so every
   * instance ends up on the same one.
   */
  private int deployHttp(String name, int port, AtomicInteger bound, Function<Vertx, Handler<HttpServerRequest>> routes, int instances,
      List<HttpVerticle> deployedInstances) {
    // A negative port is a shared random port; each component needs its own key, or they would share one socket.
    int requested = port == 0 ? (name.startsWith("coordinator") ? -1 : -2) : port;
    Blocking.await(vertx.deployVerticle(() -> {
      HttpVerticle v = new HttpVerticle(config.httpHost(), requested, config.shutdownGrace(), routes, bound);
      synchronized (deployedInstances) {
        deployedInstances.add(v);
      }
      return v;
    }, new DeploymentOptions().setInstances(instances)), Meshplane.START_TIMEOUT, "starting the " + name);
    return bound.get();
  }

  private String notReady() {
    return databaseOpen.getAsBoolean() ? "almost ready" : "waiting for PostgreSQL";
  }

  /** What the coordinator serves until PostgreSQL has answered: probes, metrics, the API's description, 503 for the rest. */
  private Handler<HttpServerRequest> startingRoutes(Vertx v) {
    return Routers.starting(v, observability, readiness, clients, openApi, Meshplane.COORDINATOR_PREFIX, this::notReady);
  }

  /** The full coordinator API on one HTTP instance: every module's routes, with bearer tokens as the way in. */
  private Handler<HttpServerRequest> coordinatorRoutes(Vertx v, ReplicaModules features) {
    Routers.Mounted mounted = Routers.api(v, observability, readiness, clients, openApi, "coordinator", Meshplane.COORDINATOR_PREFIX, true,
        features.auth.authenticator(), features.audit.log(), api -> {
          for (Module m : features.all) m.routes(api);
        });
    coordinatorApi.compareAndSet(null, mounted);
    return mounted.handler();
  }

  /** What the panel serves until PostgreSQL has answered: the dashboard's files, probes, metrics, 503 under /api/v1. */
  private Handler<HttpServerRequest> panelStartingRoutes(Vertx v) {
    return Dashboard.starting(v, observability, readiness, clients, Meshplane.PANEL_PREFIX, openApi, this::notReady);
  }

  /**
   * The full panel API on its HTTP instance: the same routes of every module as the coordinator's
   * (but the machines' own), with the panel's sessions as the way in, and the dashboard.
   */
  private Handler<HttpServerRequest> panelRoutes(Vertx v, ReplicaModules features) {
    Routers.Mounted mounted = Dashboard.mount(Routers.api(v, observability, readiness, clients, null, "panel", Meshplane.PANEL_PREFIX,
        false, features.panel.authenticator(), features.audit.log(), api -> {
          for (Module m : features.all) m.routes(api);
        }), Meshplane.PANEL_PREFIX, openApi);
    panelApi.compareAndSet(null, mounted);
    return mounted.handler();
  }

  private static List<HttpVerticle> copy(List<HttpVerticle> instances) {
    synchronized (instances) {
      return new ArrayList<>(instances);
    }
  }

  /** The APIs this replica serves, each with what it declared. */
  List<Api> apis() {
    List<Api> out = new ArrayList<>();
    for (Routers.Mounted m : new Routers.Mounted[] {coordinatorApi.get(), panelApi.get()}) {
      if (m != null) out.add(m.api());
    }
    return out;
  }

  /** Routes under {@code /v1} and {@code /api/v1} that no {@link Api} put there, but the public API description. */
  List<String> unguardedRoutes() {
    List<String> out = new ArrayList<>();
    for (Routers.Mounted m : new Routers.Mounted[] {coordinatorApi.get(), panelApi.get()}) {
      if (m != null) out.addAll(m.unguarded().get());
    }
    return out;
  }

  int coordinatorPort() {
    return coordinatorPort.get();
  }

  int panelPort() {
    return panelPort.get();
  }
}
