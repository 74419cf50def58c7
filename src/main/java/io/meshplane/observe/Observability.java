package io.meshplane.observe;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.lang.management.ManagementFactory;
import java.util.EnumSet;
import java.util.Set;

/**
 * The metrics registry of one replica (each replica in a JVM gets its own: tests run several). The
 * exposition passes {@code promtool check metrics} with no finding: three of Micrometer's JVM meters
 * break Prometheus naming rules (units other than base units, a gauge ending in {@code _count}), so
 * they are dropped or renamed here, and the process CPU time is exposed as the conventional
 * {@code process_cpu_seconds_total}.
 */
public final class Observability {
  /** Micrometer JVM meters whose names Prometheus' linter refuses (non-base units): dropped. */
  private static final Set<String> DROPPED = Set.of("jvm.compilation.time", "process.cpu.time");
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MeshMetrics mesh;

  public Observability() {
    // filters first: they apply only to meters registered after them (Vert.x binds the JVM meters later)
    registry.config().meterFilter(MeterFilter.deny(id -> DROPPED.contains(id.getName())));
    registry.config().meterFilter(new MeterFilter() {
      @Override
      public Meter.Id map(Meter.Id id) {
        // a gauge must not end in _count (that suffix belongs to histograms and summaries)
        return id.getName().equals("system.cpu.count") ? id.withName("system.cpus") : id;
      }
    });
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
      FunctionCounter.builder("process.cpu", os, o -> o.getProcessCpuTime() / 1e9)
          .baseUnit("seconds").description("CPU time used by this process").register(registry);
    }
    mesh = new MeshMetrics(registry);
  }

  /** Vert.x options with HTTP server, pool and JVM metrics going to this registry. */
  public VertxOptions applyTo(VertxOptions options) {
    return options.setMetricsOptions(new MicrometerMetricsOptions()
        .setEnabled(true)
        .setJvmMetricsEnabled(true)
        // route (a pattern, bounded), method and code: never the raw path, which would explode cardinality.
        // EB_SIDE, CLIENT_NAME and NAMESPACE tell apart meters Vert.x would otherwise register twice under one
        // id (the event bus's local and remote pending messages; each PostgreSQL pool's connections and
        // queries, named by Database): registered once each, and no "Gauge already registered" warning at start.
        .setLabels(EnumSet.of(Label.LOCAL, Label.HTTP_ROUTE, Label.HTTP_METHOD, Label.HTTP_CODE, Label.POOL_TYPE, Label.POOL_NAME,
            Label.EB_SIDE, Label.CLIENT_NAME, Label.NAMESPACE)));
  }

  public MicrometerMetricsFactory metricsFactory() {
    return new MicrometerMetricsFactory(registry);
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  public MeshMetrics mesh() {
    return mesh;
  }
}
