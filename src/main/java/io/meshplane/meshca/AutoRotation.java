package io.meshplane.meshca;

import io.meshplane.audit.Actor;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rotation's clock on every replica: every {@link #period} it reads the open rotation and what its
 * next phase waits for (the gauges {@code mesh_meshca_rotation_phase} and
 * {@code mesh_meshca_rotation_behind_nodes}), and with {@code meshca.auto_rotate} it starts an
 * intermediate rotation once the signing intermediate has lived two thirds of its life, and advances an
 * automatic rotation as soon as its preview is ready. Every replica runs it; a step taken by one makes
 * the others' attempt a 409 (the rotation's phase is checked in the step's transaction), which is
 * ignored here.
 */
final class AutoRotation {
  private static final Logger LOG = LoggerFactory.getLogger(AutoRotation.class);
  /** From this fraction of its lifetime an intermediate is rotated. */
  static final double AT = 2.0 / 3.0;

  private final Vertx vertx;
  private final Pool pool;
  private final Rotations rotations;
  private final Authorities authorities;
  private final boolean enabled;
  private final AtomicLong phase = new AtomicLong();
  private final AtomicLong behind = new AtomicLong();
  private final AtomicLong bundleBehind = new AtomicLong();
  private final AtomicLong ticks = new AtomicLong();
  private volatile boolean outsideLogged;
  private long timer = -1;

  AutoRotation(Vertx vertx, Pool pool, Rotations rotations, Authorities authorities, boolean enabled, MeterRegistry registry) {
    this.vertx = vertx;
    this.pool = pool;
    this.rotations = rotations;
    this.authorities = authorities;
    this.enabled = enabled;
    Gauge.builder("mesh_meshca_rotation_phase", phase, AtomicLong::get)
        .description("The open CA rotation's phase: 0 none, 1 staged, 2 distributing, 3 issuing").register(registry);
    Gauge.builder("mesh_meshca_rotation_behind_nodes", behind, AtomicLong::get)
        .description("Online nodes that do not yet hold what the open rotation's next phase needs (0 without a rotation)").register(registry);
    Gauge.builder("mesh_meshca_bundle_behind_nodes", bundleBehind, AtomicLong::get)
        .description("Online nodes whose last heartbeat reported another trust bundle than the current one").register(registry);
  }

  /** How often: a hundredth of the intermediate's lifetime, between 5 s and 60 s. */
  Duration period() {
    long ms = authorities.intermediateLifetime().toMillis() / 100;
    return Duration.ofMillis(Math.max(5_000, Math.min(60_000, ms)));
  }

  void start() {
    long p = period().toMillis();
    timer = vertx.setPeriodic(p / 2 + ThreadLocalRandom.current().nextLong(p / 2), p, id -> tick(Instant.now()));
  }

  void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
  }

  /** Ticks run so far (tests wait on it). */
  long ticks() {
    return ticks.get();
  }

  /** One look at the rotation as of {@code now} (the timer's; a test passes a later one to reach two thirds of a lifetime). */
  Future<Void> tick(Instant now) {
    return rotations.bundleBehind().map(n -> {
      bundleBehind.set(n);
      return null;
    }).recover(t -> Future.succeededFuture()).compose(x -> pool.withConnection(rotations::open)).compose(r -> {
      phase.set(r == null ? 0 : Rotations.PHASES.indexOf(r.phase()) + 1);
      if (r == null) {
        behind.set(0);
        return enabled && due(now) ? begin() : Future.<Void>succeededFuture();
      }
      return rotations.preview(r).compose(p -> {
        behind.set(p.getLong("behind", 0L));
        if (!enabled || !r.automatic() || !p.getBoolean("ready")) return Future.<Void>succeededFuture();
        return rotations.advance(Actor.system("auto-rotate"), request(), r.id(), r.phase()).map(moved -> {
          LOG.info("MeshCA: automatic rotation {} entered {}", moved.id(), moved.phase());
          return (Void) null;
        });
      });
    }).recover(t -> {
      if (!(t instanceof Refusal)) LOG.warn("MeshCA: the rotation check failed: {}", t.toString());
      return Future.succeededFuture();
    }).onComplete(v -> ticks.incrementAndGet());
  }

  /** Whether the signing intermediate has lived {@link #AT} of its lifetime. */
  boolean due(Instant now) {
    Authorities.Hierarchy h = authorities.current();
    if (h == null) return false;
    Instant from = h.intermediate().certificate().getNotBefore().toInstant();
    Instant to = h.intermediate().notAfter();
    return now.isAfter(from.plusMillis((long) ((to.toEpochMilli() - from.toEpochMilli()) * AT)));
  }

  private Future<Void> begin() {
    return rotations.start(Actor.system("auto-rotate"), request(), "intermediate", true).<Void>map(r -> {
      LOG.info("MeshCA: the intermediate {} has lived two thirds of its life; automatic rotation {} staged {}", r.oldIntermediate(), r.id(),
          r.newIntermediate());
      return null;
    }).recover(t -> {
      if (t instanceof Refusal f && f.getMessage() != null && f.getMessage().contains("kept outside") && !outsideLogged) {
        outsideLogged = true;
        LOG.warn("MeshCA: the intermediate has lived two thirds of its life and the root is kept outside the coordinator: sign a new "
            + "intermediate (docs/OPERATIONS.md, \"MeshCA with an offline root\")");
      }
      return Future.failedFuture(t);
    });
  }

  private static RequestInfo request() {
    return new RequestInfo(UUID.randomUUID().toString().replace("-", ""), null);
  }

  JsonObject state() {
    return new JsonObject().put("enabled", enabled).put("period_s", period().toSeconds());
  }
}
