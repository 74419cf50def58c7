package io.meshplane.module;

import io.meshplane.http.Api;
import io.meshplane.observe.Readiness;
import io.vertx.core.Future;
import java.time.Duration;

/**
 * A feature's front door: everything it contributes to a replica, which the wiring point
 * ({@code app.Meshplane}) iterates without knowing the feature's insides. A feature is built with the
 * shared services it needs (pool, cluster, its slice of the settings, other features' narrow
 * interfaces) and then goes through, in order: {@link #checks} and {@link #load} once PostgreSQL
 * answers, {@link #start}, {@link #routes} for every API and HTTP instance, and at shutdown
 * {@link #stop} (in the reverse order of the modules).
 */
public interface Module {
  /** For logs: {@code tokens}, {@code nodes}, {@code heartbeat}, {@code audit}. */
  String name();

  /** Readiness checks this feature adds (called once, before anything starts). */
  default void checks(Readiness readiness) {}

  /**
   * Reads what the feature needs from PostgreSQL before it serves (the token denylist, say). Retried
   * by the caller while PostgreSQL cannot be reached, so it must be safe to run again. Blocking: runs
   * on the start's own thread, never on an event loop.
   */
  default void load() {}

  /** Starts the feature's verticles and periodic jobs; completes when they run. */
  default Future<Void> start() {
    return Future.succeededFuture();
  }

  /**
   * Mounts the feature's routes on {@code api}: called for every API the replica serves and for each of
   * its HTTP instances, on that instance's event loop (per-loop state, such as a batcher, is made here).
   * A route for machines only is mounted when {@link Api#forMachines()}.
   */
  default void routes(Api api) {}

  /** The feature's last work before the replica closes (a last flush); completes when done. */
  default Future<Void> stop() {
    return Future.succeededFuture();
  }

  /** How long the shutdown waits for {@link #stop} before it goes on without it (logged). */
  default Duration stopTimeout() {
    return Duration.ofSeconds(15);
  }
}
