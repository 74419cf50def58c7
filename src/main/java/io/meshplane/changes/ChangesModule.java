package io.meshplane.changes;

import io.meshplane.common.Blocking;
import io.meshplane.module.Module;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.ThreadingModel;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The change log as a module, its one owner: the log and the mesh clock ({@link ChangeLog}), this
 * replica's feed ({@link ChangeFeed}) and its followers, and the announcement that makes every
 * replica read the log at once. A change is one step for its writer: append in the change's
 * transaction, commit, {@link #announce()}; every replica's followers then apply it in seq order (the
 * feed also polls every quarter of a second, so a lost announcement costs that much).
 */
public final class ChangesModule implements Module, ChangeLog.Feed {
  private static final Logger LOG = LoggerFactory.getLogger(ChangesModule.class);
  /** Every replica's feed reads the log at once when a change is announced here. */
  static final String ANNOUNCE = "meshplane.changes.appended";
  /** How long {@link #applied} waits at most for read-your-writes. */
  static final Duration APPLIED_WAIT = Duration.ofSeconds(2);

  private final Vertx vertx;
  private final List<ChangeLog.Follower> followers = new CopyOnWriteArrayList<>();
  private final ChangeFeed feed;
  private volatile String deployment;

  public ChangesModule(Vertx vertx, Pool pool, MeterRegistry registry) {
    this.vertx = vertx;
    this.feed = new ChangeFeed(pool, new ChangeLog(pool), followers);
    // named as before the log had a module of its own: dashboards and alerts read it
    Gauge.builder("mesh.policy.log.position", feed, ChangeFeed::position).description("Last change-log seq applied by this replica")
        .register(registry);
  }

  @Override
  public String name() {
    return "changes";
  }

  @Override
  public void follow(ChangeLog.Follower follower) {
    followers.add(follower);
  }

  /** Every follower from one consistent snapshot of PostgreSQL (retried by the caller while it cannot be reached). */
  @Override
  public void load() {
    long t0 = System.nanoTime();
    long seq = Blocking.await(feed.loadSnapshot(), Duration.ofMinutes(2), "loading the change log's followers");
    LOG.info("change log followers loaded at change {} in {} ms", seq, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
  }

  @Override
  public Future<Void> start() {
    return vertx.deployVerticle(feed, new DeploymentOptions().setThreadingModel(ThreadingModel.WORKER)).compose(id -> {
      deployment = id;
      return vertx.eventBus().consumer(ANNOUNCE, m -> feed.poke()).completion();
    });
  }

  @Override
  public Future<Void> stop() {
    String id = deployment;
    return id == null ? Future.succeededFuture() : vertx.undeploy(id);
  }

  @Override
  public void announce() {
    vertx.eventBus().publish(ANNOUNCE, null);
  }

  @Override
  public Future<Void> applied(long seq) {
    return Future.any(feed.applied(seq), vertx.timer(APPLIED_WAIT.toMillis())).mapEmpty();
  }

  @Override
  public long position() {
    return feed.position();
  }
}
