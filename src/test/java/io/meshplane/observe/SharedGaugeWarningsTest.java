package io.meshplane.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.spi.FilterReply;
import org.junit.jupiter.api.Test;

/** The filter drops Micrometer's double-registration message for Vert.x's meters, and nothing else. */
class SharedGaugeWarningsTest {
  private final LoggerContext context = new LoggerContext();
  private final SharedGaugeWarnings filter = new SharedGaugeWarnings();

  private FilterReply decide(String logger, String message) {
    return filter.decide(null, context.getLogger(logger), Level.WARN, message, null, null);
  }

  @Test
  void dropsOnlyTheVertxGaugesMessage() {
    String registry = "io.micrometer.core.instrument.MeterRegistry";
    assertEquals(FilterReply.DENY, decide(registry, "This Gauge has been already registered (MeterId{name='vertx.http.server.active"
        + ".connections', tags=[tag(local=0.0.0.0:8081)]}), the registration will be ignored. Note that subsequent logs will be logged"
        + " at debug level."));
    assertEquals(FilterReply.DENY, decide(registry, "This Gauge has been already registered (MeterId{name='vertx.net.client.active"
        + ".connections', tags=[tag(client_name=postgres),tag(local=?)]}), the registration will be ignored."));
    assertEquals(FilterReply.NEUTRAL, decide(registry, "This Gauge has been already registered (MeterId{name='mesh.nodes', tags=[]}),"
        + " the registration will be ignored."), "Meshplane's own meters still warn");
    assertEquals(FilterReply.NEUTRAL, decide(registry, "This FunctionCounter has been already registered (MeterId{name='vertx.x'})"));
    assertEquals(FilterReply.NEUTRAL, decide(registry, "There is already a registered meter of a different type"));
    assertEquals(FilterReply.NEUTRAL, decide("io.meshplane.app.Meshplane", "This Gauge has been already registered (MeterId{name='vertx."));
    assertEquals(FilterReply.NEUTRAL, filter.decide(null, context.getLogger(registry), Level.WARN, null, null, null));
  }
}
