package io.meshplane.observe;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.healthchecks.CheckResult;
import io.vertx.ext.healthchecks.HealthChecks;
import io.vertx.ext.healthchecks.Status;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Readiness (API.md §15): a replica is ready only when every registered check passes. Features add their
 * checks at wiring time (PostgreSQL answers, the cluster member has joined, deployment finished, ...).
 * Each check has a timeout so a hung dependency reads as DOWN, not as a hung probe. A check may carry
 * details besides its status (the write-behind reports quarantined rows while it stays UP).
 *
 * <p>A probe may leave checks out of the verdict ({@code /readyz?exclude=postgres}, as Kubernetes' own
 * API server does): they are still run and shown, marked {@code "excluded": true}. The manifests use it
 * so that a PostgreSQL outage does not take every replica out of the Service while heartbeats, which
 * need only the cluster, could still be taken.
 */
public final class Readiness {
  private static final long CHECK_TIMEOUT_MS = 2000;
  private final HealthChecks checks;
  private final Set<String> names = Collections.synchronizedSet(new LinkedHashSet<>());

  public Readiness(Vertx vertx) {
    this.checks = HealthChecks.create(vertx);
  }

  /** A check that completes asynchronously; a failed future reads as DOWN with {@code downReason} of its failure. */
  public Readiness registerAsync(String name, Supplier<Future<?>> probe, Function<Throwable, String> downReason) {
    names.add(name);
    checks.register(name, CHECK_TIMEOUT_MS, (Promise<Status> p) -> {
      Future<?> f;
      try {
        f = probe.get();
      } catch (RuntimeException e) {
        f = Future.failedFuture(e);
      }
      f.onComplete(ar -> {
        if (ar.succeeded()) p.complete(Status.OK());
        else p.complete(Status.KO(new JsonObject().put("reason", downReason.apply(ar.cause()))));
      });
    });
    return this;
  }

  /** A check answered from local state; the supplier returns null when up, else the reason it is down. */
  public Readiness registerLocal(String name, Supplier<String> downReason) {
    return registerLocal(name, downReason, () -> null);
  }

  /** As {@link #registerLocal(String, Supplier)}, with details (null for none) shown whether up or down. */
  public Readiness registerLocal(String name, Supplier<String> downReason, Supplier<JsonObject> details) {
    names.add(name);
    checks.register(name, CHECK_TIMEOUT_MS, (Promise<Status> p) -> {
      String reason = downReason.get();
      JsonObject data = details.get();
      if (data == null) data = new JsonObject();
      p.complete(reason == null ? Status.OK(data) : Status.KO(data.copy().put("reason", reason)));
    });
    return this;
  }

  /** The names of the registered checks, in registration order. */
  public Set<String> names() {
    synchronized (names) {
      return Set.copyOf(names);
    }
  }

  /** {@code {"status": "UP"|"DOWN", "checks": {name: {"status", "reason"?, details...}}}} */
  public Future<JsonObject> check() {
    return check(Set.of());
  }

  /** As {@link #check()}, with the checks named in {@code exclude} shown but left out of the verdict. */
  public Future<JsonObject> check(Set<String> exclude) {
    return checks.checkStatus().map(result -> {
      JsonObject byName = new JsonObject();
      boolean allUp = true;
      if (result.getChecks() != null) {
        for (CheckResult c : result.getChecks()) {
          boolean up = CheckResult.isUp(c);
          boolean excluded = exclude.contains(c.getId());
          if (!excluded) allUp &= up;
          JsonObject entry = new JsonObject().put("status", up ? "UP" : "DOWN");
          if (excluded) entry.put("excluded", true);
          JsonObject data = c.getData();
          if (!up) {
            String reason = data != null && data.getString("reason") != null ? data.getString("reason")
                : data != null && data.getString("cause") != null ? "check timed out" : "check failed";
            entry.put("reason", reason);
          }
          if (data != null) {
            for (String k : data.fieldNames()) {
              if (!k.equals("reason") && !k.equals("cause")) entry.put(k, data.getValue(k));
            }
          }
          byName.put(c.getId(), entry);
        }
      }
      return new JsonObject().put("status", allUp ? "UP" : "DOWN").put("checks", byName);
    });
  }
}
