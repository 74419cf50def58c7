package io.meshplane.meshca;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.access.Boundary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MeshCA's gauges (docs/OPERATIONS.md, "Metrics"). {@code mesh_meshca_node_certificates{state}}: the
 * mesh's nodes by the state of their current certificate, sampled every {@code metrics.gauge_interval} (15 s) by the
 * cluster's <b>oldest member only</b> (one summary query on the read pool per interval cluster-wide, as
 * the pending nodes' count and the overview's node counts are); 0 on the other replicas, so the sum and
 * the maximum across replicas are both the mesh's figure. {@code mesh_meshca_authority_expiry_seconds{kind,id}}:
 * the seconds until each CA certificate of the loaded hierarchy expires, on every replica (from memory,
 * computed at each scrape; the rows follow the hierarchy at each interval).
 */
final class MeshcaGauges {
  private static final Logger LOG = LoggerFactory.getLogger(MeshcaGauges.class);
  private final Duration interval;
  static final List<String> STATES = List.of("valid", "expiring", "expired");

  private final Vertx vertx;
  private final HazelcastInstance hz;
  private final Authorities authorities;
  private final MeshcaStatus status;
  private final Map<String, AtomicLong> counts = new java.util.LinkedHashMap<>();
  private final MultiGauge expiry;
  private Authorities.Hierarchy shown;
  private boolean counting;
  private long timer = -1;
  /** Ticks of this replica's sampler, and the counts queries it ran (tests wait on them). */
  private final AtomicLong ticks = new AtomicLong();
  private final AtomicLong queries = new AtomicLong();

  MeshcaGauges(Vertx vertx, HazelcastInstance hz, MeterRegistry registry, Authorities authorities, MeshcaStatus status, Duration interval) {
    this.interval = interval;
    this.vertx = vertx;
    this.hz = hz;
    this.authorities = authorities;
    this.status = status;
    for (String s : STATES) {
      AtomicLong v = new AtomicLong();
      counts.put(s, v);
      Gauge.builder("mesh.meshca.node.certificates", v, AtomicLong::doubleValue)
          .description("Nodes by the state of their latest unrevoked certificate (valid, expiring: past half its lifetime, expired); "
              + "sampled by the oldest replica only, 0 on the others")
          .tag("state", s).register(registry);
    }
    this.expiry = MultiGauge.builder("mesh.meshca.authority.expiry.seconds")
        .description("Seconds until each CA certificate of the hierarchy (root, intermediate) expires").register(registry);
  }

  void start() {
    sample();
    timer = vertx.setPeriodic(interval.toMillis(), t -> sample());
  }

  void stop() {
    if (timer >= 0) vertx.cancelTimer(timer);
  }

  private void sample() {
    ticks.incrementAndGet();
    authorityRows();
    if (!io.meshplane.observe.OldestMember.isLocal(hz)) {
      counts.values().forEach(v -> v.set(0));
      return;
    }
    if (counting) return; // the last query still runs (a slow database): this interval keeps the last figures
    counting = true;
    queries.incrementAndGet();
    status.counts(Boundary.EVERYTHING).onComplete(ar -> {
      counting = false;
      if (ar.failed()) {
        LOG.debug("MeshCA's node certificate gauges not sampled: {}", ar.cause().getMessage());
        return;
      }
      CertificateRepository.Summary s = ar.result();
      counts.get("valid").set(s.valid());
      counts.get("expiring").set(s.expiring());
      counts.get("expired").set(s.expired());
    });
  }

  /** The rows of the expiry gauge: the roots and the signing intermediate of the hierarchy loaded now (rewritten when it changes). */
  private void authorityRows() {
    Authorities.Hierarchy h = authorities.current();
    if (h == null || h == shown) return;
    List<Authorities.Authority> all = new ArrayList<>(h.roots());
    all.add(h.intermediate());
    List<MultiGauge.Row<?>> rows = new ArrayList<>();
    for (Authorities.Authority a : all) {
      rows.add(MultiGauge.Row.of(Tags.of("kind", a.kind(), "id", a.id()), a,
          x -> Duration.between(Instant.now(), x.notAfter()).toMillis() / 1000.0));
    }
    expiry.register(rows, true);
    shown = h;
  }


  /** How many times this replica's sampler ran. */
  long ticks() {
    return ticks.get();
  }

  /** How many counts queries this replica ran (the oldest member's only). */
  long queries() {
    return queries.get();
  }
}
