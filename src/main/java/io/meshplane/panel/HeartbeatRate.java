package io.meshplane.panel;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.micrometer.core.instrument.Counter;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.concurrent.TimeUnit;

/**
 * The mesh's heartbeat rate for the overview: every replica samples its own heartbeat counter every
 * {@value #SAMPLE_MS} ms and publishes its rate in a small cluster map (one entry per member, which
 * expires if the member stops publishing); the overview sums the entries. No scrape, no Prometheus
 * needed for the dashboard's one number.
 */
final class HeartbeatRate {
  static final String MAP = "meshplane.panel.rates";
  private static final long SAMPLE_MS = 5000;

  private final Vertx vertx;
  private final IMap<String, Double> rates;
  private final String member;
  private final Counter heartbeats;
  private long timer = -1;
  private double lastCount = -1;
  private long lastAt;

  HeartbeatRate(Vertx vertx, HazelcastInstance hz, Counter heartbeats) {
    this.vertx = vertx;
    this.rates = hz.getMap(MAP);
    this.member = hz.getCluster().getLocalMember().getUuid().toString();
    this.heartbeats = heartbeats;
  }

  void start() {
    timer = vertx.setPeriodic(SAMPLE_MS, t -> sample());
  }

  private void sample() {
    double count = heartbeats.count();
    long now = System.nanoTime();
    if (lastCount >= 0) {
      double rate = (count - lastCount) / ((now - lastAt) / 1e9);
      rates.putAsync(member, rate, 4 * SAMPLE_MS, TimeUnit.MILLISECONDS);
    }
    lastCount = count;
    lastAt = now;
  }

  /** The sum of the replicas' last published rates (0 until the first samples). */
  Future<Double> clusterRate() {
    return vertx.executeBlocking(() -> {
      double sum = 0;
      for (Double r : rates.values()) sum += r;
      return sum;
    }, false);
  }

  void stop() {
    vertx.cancelTimer(timer);
  }
}
