package io.meshplane.observe;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.util.EnumSet;

/** The metrics registry of one replica (each replica in a JVM gets its own: tests run several). */
public final class Observability {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MeshMetrics mesh = new MeshMetrics(registry);

  /** Vert.x options with HTTP server, pool and JVM metrics going to this registry. */
  public VertxOptions applyTo(VertxOptions options) {
    return options.setMetricsOptions(new MicrometerMetricsOptions()
        .setEnabled(true)
        .setJvmMetricsEnabled(true)
        // route (a pattern, bounded), method and code: never the raw path, which would explode cardinality
        .setLabels(EnumSet.of(Label.LOCAL, Label.HTTP_ROUTE, Label.HTTP_METHOD, Label.HTTP_CODE, Label.POOL_TYPE, Label.POOL_NAME)));
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
