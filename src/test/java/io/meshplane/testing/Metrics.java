package io.meshplane.testing;

import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.client.HttpResponse;

/**
 * Reads one series of a replica's (or an agent's) {@code /metrics}, the counters tests wait on: e.g.
 * {@link #FLUSHES}, so that "nothing was written" is asserted after a flush that could have written it.
 */
public final class Metrics {
  /** Write-behind flushes completed by one replica (each flush is timed once, failed or not). */
  public static final String FLUSHES = "mesh_writebehind_flush_seconds_count";

  private Metrics() {}

  /** The value of {@code series} (name and labels as Prometheus shows them) on the /metrics served at {@code port}. */
  public static double value(Http http, int port, String series) {
    HttpResponse<Buffer> r = http.get(port, "/metrics");
    if (r.statusCode() != 200) throw new AssertionError("/metrics on " + port + " answered " + r.statusCode());
    for (String line : r.bodyAsString().split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
    }
    throw new AssertionError("no series " + series + " in the /metrics of " + port + ":\n" + r.bodyAsString());
  }

  /**
   * Waits until each replica (by coordinator port) has completed {@code flushes} more write-behind
   * flushes: with 2, at least one whole flush started after everything this thread did before (the one
   * under way may have read the map earlier).
   */
  public static void awaitFlushes(Http http, int flushes, int... ports) {
    double[] from = new double[ports.length];
    for (int i = 0; i < ports.length; i++) from[i] = value(http, ports[i], FLUSHES);
    for (int i = 0; i < ports.length; i++) {
      int port = ports[i];
      double target = from[i] + flushes;
      Await.until(flushes + " more write-behind flushes on " + port, () -> value(http, port, FLUSHES), v -> v >= target);
    }
  }
}
