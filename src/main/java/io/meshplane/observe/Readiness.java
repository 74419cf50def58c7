package io.meshplane.observe;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.healthchecks.CheckResult;
import io.vertx.ext.healthchecks.HealthChecks;
import io.vertx.ext.healthchecks.Status;
import java.util.function.Supplier;

/**
 * Readiness (SPEC §8): a replica is ready only when every registered check passes. Features add their
 * checks at wiring time (PostgreSQL answers, the cluster member has joined, deployment finished, ...).
 * Each check has a timeout so a hung dependency reads as DOWN, not as a hung probe.
 */
public final class Readiness {
  private static final long CHECK_TIMEOUT_MS = 2000;
  private final HealthChecks checks;

  public Readiness(Vertx vertx) {
    this.checks = HealthChecks.create(vertx);
  }

  /** A check that completes asynchronously; a failed future reads as DOWN with the failure's message. */
  public Readiness registerAsync(String name, Supplier<Future<?>> probe, String downReason) {
    checks.register(name, CHECK_TIMEOUT_MS, (Promise<Status> p) -> probe.get().onComplete(ar -> {
      if (ar.succeeded()) p.complete(Status.OK());
      else p.complete(Status.KO(new JsonObject().put("reason", downReason)));
    }));
    return this;
  }

  /** A check answered from local state; the supplier returns null when up, else the reason it is down. */
  public Readiness registerLocal(String name, Supplier<String> downReason) {
    checks.register(name, CHECK_TIMEOUT_MS, (Promise<Status> p) -> {
      String reason = downReason.get();
      p.complete(reason == null ? Status.OK() : Status.KO(new JsonObject().put("reason", reason)));
    });
    return this;
  }

  /** {@code {"status": "UP"|"DOWN", "checks": {name: {"status", "reason"?}}}} */
  public Future<JsonObject> check() {
    return checks.checkStatus().map(result -> {
      JsonObject byName = new JsonObject();
      boolean allUp = true;
      if (result.getChecks() != null) {
        for (CheckResult c : result.getChecks()) {
          boolean up = CheckResult.isUp(c);
          allUp &= up;
          JsonObject entry = new JsonObject().put("status", up ? "UP" : "DOWN");
          if (!up) {
            JsonObject data = c.getData();
            String reason = data != null && data.getString("reason") != null ? data.getString("reason")
                : data != null && data.getString("cause") != null ? "check timed out" : "check failed";
            entry.put("reason", reason);
          }
          byName.put(c.getId(), entry);
        }
      }
      return new JsonObject().put("status", allUp ? "UP" : "DOWN").put("checks", byName);
    });
  }
}
