package io.meshplane.common;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A pool of threads of its own for work whose cost grows with a request's input or with the data
 * (policy tests, previews and compiles): never an event loop, and never Vert.x's shared worker pool
 * (which the write-behind, the change feed and blocking cluster calls need). Every job is admitted
 * before it is queued, or refused at once:
 * <ul>
 *   <li>at most {@code perCaller} jobs of one caller at a time, else 429 {@code rate_limited};
 *   <li>at most {@code perGroup} jobs of one group (a team and environment) at a time, else 429
 *       {@code rate_limited}: one team, however many credentials it holds, never takes every slot;
 *   <li>at most {@code maxInFlight} jobs in all (running and queued), else 503 {@code busy};
 * </ul>
 * both with {@code Retry-After}. An admitted job gets a {@link Deadline} that starts at admission (so
 * time spent queued counts): work that checks it stops with 503 {@code deadline_exceeded} once it is
 * past. Jobs are not ordered; the future completes on the caller's context.
 */
public final class BoundedWork implements AutoCloseable {
  /** The pool's size and limits. */
  public record Limits(int threads, int maxInFlight, int perCaller, int perGroup, Duration deadline) {
    public Limits {
      if (threads < 1 || maxInFlight < threads || perCaller < 1 || perCaller > maxInFlight || perGroup < 1 || perGroup > maxInFlight
          || deadline.isNegative() || deadline.isZero()) {
        throw new IllegalArgumentException("bad work limits: " + threads + " threads, " + maxInFlight + " in flight, " + perCaller
            + " per caller, " + perGroup + " per group, deadline " + deadline);
      }
    }
  }

  private final String name;
  private final Limits limits;
  private final WorkerExecutor executor;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final ConcurrentHashMap<String, Integer> byCaller = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Integer> byGroup = new ConcurrentHashMap<>();
  private final Counter admitted;
  private final Counter refusedBusy;
  private final Counter refusedCaller;
  private final Counter refusedGroup;
  private final Counter overDeadline;

  public BoundedWork(Vertx vertx, String name, Limits limits, MeterRegistry registry) {
    this.name = name;
    this.limits = limits;
    // maxExecuteTime only tunes Vert.x's blocked-thread warning: a job is stopped by its Deadline
    this.executor = vertx.createSharedWorkerExecutor("meshplane-" + name, limits.threads(), limits.deadline().toNanos() * 2,
        TimeUnit.NANOSECONDS);
    this.admitted = Counter.builder("mesh.work.admitted").description("Jobs admitted to a bounded work pool").tag("pool", name)
        .register(registry);
    this.refusedBusy = Counter.builder("mesh.work.refused").description("Jobs refused by a bounded work pool, by reason")
        .tag("pool", name).tag("reason", "busy").register(registry);
    this.refusedCaller = Counter.builder("mesh.work.refused").description("Jobs refused by a bounded work pool, by reason")
        .tag("pool", name).tag("reason", "caller").register(registry);
    this.refusedGroup = Counter.builder("mesh.work.refused").description("Jobs refused by a bounded work pool, by reason")
        .tag("pool", name).tag("reason", "group").register(registry);
    this.overDeadline = Counter.builder("mesh.work.deadline.exceeded").description("Jobs stopped at their deadline")
        .tag("pool", name).register(registry);
    Gauge.builder("mesh.work.in.flight", inFlight, AtomicInteger::get).description("Jobs running or queued in a bounded work pool")
        .tag("pool", name).register(registry);
  }

  public Limits limits() {
    return limits;
  }

  /**
   * Runs {@code job} on the pool for {@code caller} (a token or user id) in {@code group} (the team
   * and environment it works on), or refuses it at once. {@code what} names the work in refusals
   * ("policy evaluation").
   */
  public <T> Future<T> submit(String caller, String group, String what, Function<Deadline, T> job) {
    return submit(caller, group, what, Future::succeededFuture, job);
  }

  /**
   * As {@link #submit(String, String, String, Function)}, with {@code ready} run first (on the
   * caller's thread, once admitted, the slot held): what the job needs in place before it can run
   * (read-your-writes). A refused request costs neither.
   */
  public <T> Future<T> submit(String caller, String group, String what, java.util.function.Supplier<Future<?>> ready,
      Function<Deadline, T> job) {
    if (byCaller.merge(caller, 1, Integer::sum) > limits.perCaller()) {
      release(byCaller, caller);
      refusedCaller.increment();
      return Future.failedFuture(Refusal.rateLimited("you have " + limits.perCaller() + " " + what + "s running at once already: wait for "
          + "them to finish", 1));
    }
    if (byGroup.merge(group, 1, Integer::sum) > limits.perGroup()) {
      release(byGroup, group);
      release(byCaller, caller);
      refusedGroup.increment();
      return Future.failedFuture(Refusal.rateLimited(group + " has " + limits.perGroup() + " " + what + "s running at once already: wait "
          + "for them to finish", 1));
    }
    if (inFlight.incrementAndGet() > limits.maxInFlight()) {
      inFlight.decrementAndGet();
      release(byGroup, group);
      release(byCaller, caller);
      refusedBusy.increment();
      return Future.failedFuture(Refusal.unavailable("busy", "this replica is running " + limits.maxInFlight() + " " + what
          + "s already; retry shortly", 2));
    }
    admitted.increment();
    Deadline deadline = new Deadline(System.nanoTime() + limits.deadline().toNanos(), limits.deadline(), what);
    Future<?> before;
    try {
      before = ready.get();
    } catch (RuntimeException e) {
      before = Future.failedFuture(e);
    }
    return before.compose(v -> executor.<T>executeBlocking(() -> job.apply(deadline.check()), false))
        // the pool shut down under the job (the replica is stopping): unavailable, retry elsewhere, never a 500
        .recover(t -> t instanceof java.util.concurrent.RejectedExecutionException
            ? Future.failedFuture(Refusal.unavailable("unavailable", "this replica is shutting down; retry", 1)) : Future.failedFuture(t))
        .andThen(ar -> {
      inFlight.decrementAndGet();
      release(byGroup, group);
      release(byCaller, caller);
      if (ar.failed() && ar.cause() instanceof Refusal r && Deadline.CODE.equals(r.code())) overDeadline.increment();
    });
  }

  private static void release(ConcurrentHashMap<String, Integer> counts, String key) {
    counts.computeIfPresent(key, (k, v) -> v <= 1 ? null : v - 1);
  }

  /** Jobs running or queued now. */
  public int inFlight() {
    return inFlight.get();
  }

  @Override
  public void close() {
    executor.close();
  }

  @Override
  public String toString() {
    return name + " " + limits;
  }
}
