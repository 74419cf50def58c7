package io.meshplane.watch;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;

/** The watch stream's metric families ({@code mesh_watch_*}), every label value registered at start. */
final class WatchMetrics {
  /** Why a stream ends: the {@code reason} label and the {@code close} line's reason. */
  static final List<String> REASONS = List.of("token_revoked", "token_expired", "node_deleted", "slow_reader", "draining", "client_gone");
  /** Why a stream was refused before it opened. */
  static final List<String> REFUSALS = List.of("rate", "too_many_streams", "draining");

  final Counter opened;
  final Counter answers;
  final Counter pings;
  final Counter bytes;
  final Counter passes;
  final Counter checked;
  final Counter shared;
  final Timer delay;
  private final Map<String, Counter> closed = new HashMap<>();
  private final Map<String, Counter> refused = new HashMap<>();
  /** Held here: a gauge keeps only a weak reference to what it reads (a lambda nobody else holds reads NaN once collected). */
  private final IntSupplier open;

  WatchMetrics(MeterRegistry r, IntSupplier open) {
    this.open = open;
    Gauge.builder("mesh.watch.streams", this, m -> m.open.getAsInt())
        .description("Watch streams open on this replica").register(r);
    opened = Counter.builder("mesh.watch.opened").description("Watch streams opened on this replica (admitted and started)").register(r);
    answers = Counter.builder("mesh.watch.messages").tag("type", "answer").description("Lines written to watch streams, by type").register(r);
    pings = Counter.builder("mesh.watch.messages").tag("type", "ping").description("Lines written to watch streams, by type").register(r);
    bytes = Counter.builder("mesh.watch.bytes").description("Bytes written to watch streams").register(r);
    passes = Counter.builder("mesh.watch.passes").description("Dispatch passes (after changes applied from the change log, or for new streams)")
        .register(r);
    checked = Counter.builder("mesh.watch.checked").description("Streams compared with their node's current versions by dispatch passes")
        .register(r);
    shared = Counter.builder("mesh.watch.shared.parts")
        .description("Parts of answers encoded once per dispatch pass and written to every stream that needed them (per class of nodes)")
        .register(r);
    delay = Timer.builder("mesh.watch.delay")
        .description("From a change's commit (its change-log entry) to its answer written to a stream")
        .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(60)).register(r);
    for (String reason : REASONS) {
      closed.put(reason, Counter.builder("mesh.watch.closed").tag("reason", reason).description("Watch streams ended, by reason").register(r));
    }
    for (String reason : REFUSALS) {
      refused.put(reason, Counter.builder("mesh.watch.refused").tag("reason", reason)
          .description("Watch streams refused before they opened: admission rate (503), the node's limit (409), shutting down (503)").register(r));
    }
  }

  void closed(String reason) {
    closed.get(reason).increment();
  }

  void refused(String reason) {
    refused.get(reason).increment();
  }
}
