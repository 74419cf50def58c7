package io.meshplane.agent;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the fleet simulator counts of its watch streams ({@code --watch}), from every event loop at once,
 * and the part of the summary lines it prints: streams open, attempts, opened, refusals by status (or
 * {@code connect}, {@code closed}, ... when no answer came), endings by reason, lines by type, and the
 * delay from an answer's {@code committed_at} to the moment the node applied it, per kind of change
 * ({@code acl}, {@code peers}, {@code commands}, {@code other}; a stream's first answer, a catch-up, is
 * counted apart and has no delay), and the time from a stream's loss to its re-open. Same log-bucketed
 * histograms as the heartbeat latency ({@link SimStats}).
 */
final class StreamStats {
  static final String[] KINDS = {NodeWatch.KIND_ACL, NodeWatch.KIND_PEERS, NodeWatch.KIND_COMMANDS, NodeWatch.KIND_OTHER};
  static final String[] TYPES = {"answer", "ping", "close", "other"};

  final LongAdder open = new LongAdder();
  final LongAdder connects = new LongAdder();
  final LongAdder opened = new LongAdder();
  final LongAdder firstAnswers = new LongAdder();
  final LongAdder earlyBeats = new LongAdder();
  /** Streams open again after a loss (an open stream that ended), and the time from the loss to the re-open. */
  final LongAdder reopened = new LongAdder();
  private final AtomicLongArray reopen = new AtomicLongArray(SimStats.BUCKETS);
  private final LongAdder[] messages = new LongAdder[TYPES.length];
  private final Map<String, LongAdder> refused = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> ended = new ConcurrentHashMap<>();
  private final AtomicLongArray[] delay = new AtomicLongArray[KINDS.length];

  StreamStats() {
    for (int i = 0; i < TYPES.length; i++) messages[i] = new LongAdder();
    for (int i = 0; i < KINDS.length; i++) delay[i] = new AtomicLongArray(SimStats.BUCKETS);
  }

  /** A copy of every counter at one moment. */
  record Snapshot(long open, long connects, long opened, long firstAnswers, long earlyBeats, long[] messages, Map<String, Long> refused,
      Map<String, Long> ended, long[][] delay, long reopened, long[] reopen) {}

  void message(String type) {
    int i = 0;
    while (i < TYPES.length - 1 && !TYPES[i].equals(type)) i++;
    messages[i].increment();
  }

  /** Why no stream: the HTTP status ({@code 409}, {@code 503}, ...) or the transport's kind ({@code connect}). */
  void refused(Reply r) {
    String key = r.status() > 0 ? Integer.toString(r.status()) : r.error();
    refused.computeIfAbsent(key, k -> new LongAdder()).increment();
  }

  void ended(String reason) {
    ended.computeIfAbsent(reason, k -> new LongAdder()).increment();
  }

  void applied(String kind, long delayMs) {
    if (delayMs < 0) {
      firstAnswers.increment();
      return;
    }
    int i = 0;
    while (i < KINDS.length - 1 && !KINDS[i].equals(kind)) i++;
    delay[i].incrementAndGet(SimStats.bucket(delayMs * 1000));
  }

  /** A node's stream is open again {@code lostForMs} after its previous one ended (a replica died, a close line, an owner hint). */
  void reopened(long lostForMs) {
    reopened.increment();
    reopen.incrementAndGet(SimStats.bucket(Math.max(0, lostForMs) * 1000));
  }

  Snapshot snapshot() {
    long[] m = new long[TYPES.length];
    for (int i = 0; i < m.length; i++) m[i] = messages[i].sum();
    long[][] d = new long[KINDS.length][SimStats.BUCKETS];
    for (int k = 0; k < KINDS.length; k++) {
      for (int b = 0; b < SimStats.BUCKETS; b++) d[k][b] = delay[k].get(b);
    }
    long[] r = new long[SimStats.BUCKETS];
    for (int b = 0; b < SimStats.BUCKETS; b++) r[b] = reopen.get(b);
    return new Snapshot(open.sum(), connects.sum(), opened.sum(), firstAnswers.sum(), earlyBeats.sum(), m, sums(refused), sums(ended), d, reopened.sum(), r);
  }

  private static Map<String, Long> sums(Map<String, LongAdder> m) {
    Map<String, Long> out = new TreeMap<>();
    m.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /**
   * The stream part of a summary line, for what happened between {@code a} and {@code b}:
   * {@code streams open 100000, connects 12 (opened 10), refused 409=1 503=1, ended slow_reader=1,
   * messages 3400 (answer 200 ping 3200 close 0 other 0), first answers 10, early heartbeats 3,
   * delay acl p50 … p90 … p99 … max … (n 100) peers … commands … other …, re-opened after a loss 12 p50 … p99 … max …}.
   * A kind without answers prints {@code -} for each figure and {@code (n 0)}.
   */
  static String describe(Snapshot a, Snapshot b) {
    StringBuilder sb = new StringBuilder(256);
    long total = 0;
    for (int i = 0; i < TYPES.length; i++) total += b.messages()[i] - a.messages()[i];
    sb.append(String.format(Locale.ROOT, "streams open %d, connects %d (opened %d), refused %s, ended %s, messages %d (", b.open(),
        b.connects() - a.connects(), b.opened() - a.opened(), SimStats.errors(a.refused(), b.refused()), SimStats.errors(a.ended(), b.ended()), total));
    for (int i = 0; i < TYPES.length; i++) sb.append(i == 0 ? "" : " ").append(TYPES[i]).append(' ').append(b.messages()[i] - a.messages()[i]);
    sb.append(String.format(Locale.ROOT, "), first answers %d, early heartbeats %d, delay", b.firstAnswers() - a.firstAnswers(),
        b.earlyBeats() - a.earlyBeats()));
    for (int k = 0; k < KINDS.length; k++) {
      long[] d = SimStats.diff(a.delay()[k], b.delay()[k]);
      long n = 0;
      for (long c : d) n += c;
      sb.append(' ').append(KINDS[k]).append(String.format(Locale.ROOT, " p50 %s p90 %s p99 %s max %s (n %d)", SimStats.ms(SimStats.quantile(d, 0.50)),
          SimStats.ms(SimStats.quantile(d, 0.90)), SimStats.ms(SimStats.quantile(d, 0.99)), SimStats.ms(SimStats.quantile(d, 1.0)), n));
    }
    long[] r = SimStats.diff(a.reopen(), b.reopen());
    sb.append(String.format(Locale.ROOT, ", re-opened after a loss %d p50 %s p99 %s max %s", b.reopened() - a.reopened(),
        SimStats.ms(SimStats.quantile(r, 0.50)), SimStats.ms(SimStats.quantile(r, 0.99)), SimStats.ms(SimStats.quantile(r, 1.0))));
    return sb.toString();
  }

  /** An empty snapshot: the start of a run. */
  static Snapshot zero() {
    return new Snapshot(0, 0, 0, 0, 0, new long[TYPES.length], Map.of(), Map.of(), new long[KINDS.length][SimStats.BUCKETS], 0, new long[SimStats.BUCKETS]);
  }
}
