package io.meshplane.observe;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import org.slf4j.Marker;

/**
 * Drops exactly one log message: Micrometer's "This Gauge has been already registered
 * (MeterId{name='vertx.…'})". Vert.x's metrics (vertx-micrometer-metrics 5) register a gauge again
 * for every connection, request or pool with the same labels: the second connection to a port (whichever
 * of the HTTP instances sharing it takes it), the second PostgreSQL connection of a pool. Micrometer keeps the
 * first gauge and ignores the new one, and warns; but every registration of one id gets the same
 * counter from Vert.x (its per-registry map of id to {@code LongAdder}, which the kept gauge reads),
 * so the gauge counts every connection of every instance: nothing is lost, the warning is noise
 * (vert-x3/vertx-micrometer-metrics#259). A re-registration of any other meter (Meshplane's own
 * {@code mesh_*}, Micrometer's JVM meters) is still logged. Configured in {@code logback.xml}
 * (docs/OPERATIONS.md, "Metrics").
 */
public final class SharedGaugeWarnings extends TurboFilter {
  static final String LOGGER = "io.micrometer.core.instrument.MeterRegistry";
  static final String MESSAGE = "This Gauge has been already registered (MeterId{name='vertx.";

  @Override
  public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
    // called for every log statement: the logger's name first (a reference compare most of the time)
    if (format == null || !LOGGER.equals(logger.getName())) return FilterReply.NEUTRAL;
    return format.startsWith(MESSAGE) ? FilterReply.DENY : FilterReply.NEUTRAL;
  }
}
