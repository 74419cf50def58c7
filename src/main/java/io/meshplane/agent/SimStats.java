package io.meshplane.agent;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the fleet simulator counts, from every event loop at once (adders, an atomic histogram), and the
 * summary lines it prints from them: per period (rates, latency quantiles, errors by kind) and at the end.
 */
final class SimStats {
  /** Latency buckets: bucket b (>= 1) holds [GROWTH^(b-1), GROWTH^b) microseconds; 480 reach past 60 s. */
  static final double GROWTH = 1.04;
  static final int BUCKETS = 480;
  private static final double LOG_GROWTH = Math.log(GROWTH);

  final LongAdder enrollAttempts = new LongAdder();
  final LongAdder enrolled = new LongAdder();
  final LongAdder enrollFailed = new LongAdder();
  final LongAdder sent = new LongAdder();
  final LongAdder accepted = new LongAdder();
  final LongAdder peersReceived = new LongAdder();
  final LongAdder bytesIn = new LongAdder();
  final LongAdder bytesOut = new LongAdder();
  final LongAdder commands = new LongAdder();
  /** With --certificates: certificates adopted, CSRs deferred by the signing budget, certificates or CSRs refused. */
  final LongAdder certificates = new LongAdder();
  final LongAdder certificatesDeferred = new LongAdder();
  final LongAdder certificatesRefused = new LongAdder();
  /** With --certificates: revocation lists a node applied (a new version, the first one included), and when the latest was (epoch ms). */
  final LongAdder revocationUpdates = new LongAdder();
  final java.util.concurrent.atomic.LongAccumulator revocationLastMs = new java.util.concurrent.atomic.LongAccumulator(Math::max, 0);
  /** With --certificates: when the latest certificate was adopted (epoch ms), and each shard's count of nodes holding an expired one. */
  final java.util.concurrent.atomic.LongAccumulator certificateLastMs = new java.util.concurrent.atomic.LongAccumulator(Math::max, 0);
  final Map<Integer, Integer> expiredNow = new ConcurrentHashMap<>();
  /** With --certificates: sampled pairs checked (A's certificate and chain under B's bundle at B's skewed clock: {@link SimPairs}), failed, the latest failure. */
  final LongAdder pairsChecked = new LongAdder();
  final LongAdder pairsFailed = new LongAdder();
  volatile String lastPairFailure;
  /**
   * With --control: nodes offline now; nodes brought back (since the start), those of them current again (the bundle and
   * the certificate's issuer most of their shard's online nodes hold, the certificate valid under it), the longest time
   * from a return to current (ms); the sampled pairs with a node back and current (apart from the others).
   */
  final LongAdder offlineNow = new LongAdder();
  final LongAdder returned = new LongAdder();
  final LongAdder recovered = new LongAdder();
  final java.util.concurrent.atomic.LongAccumulator recoveryMaxMs = new java.util.concurrent.atomic.LongAccumulator(Math::max, -1);
  final LongAdder returnedPairsChecked = new LongAdder();
  final LongAdder returnedPairsFailed = new LongAdder();
  /** With --ingress-tag: the simulated ingress nodes per routes version they applied, and when the latest apply was (epoch ms). */
  private final Map<String, LongAdder> ingressVersions = new ConcurrentHashMap<>();
  final java.util.concurrent.atomic.LongAccumulator ingressLastMs = new java.util.concurrent.atomic.LongAccumulator(Math::max, 0);
  private final Map<String, LongAdder> errors = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> commandsByKind = new ConcurrentHashMap<>();
  private final AtomicLongArray latency = new AtomicLongArray(BUCKETS);
  /** The watch streams' figures ({@code --watch}); null without. */
  final StreamStats streams;

  SimStats(boolean watch) {
    streams = watch ? new StreamStats() : null;
  }

  /** A copy of every counter at one moment, to compute a period's figures as differences. */
  record Snapshot(long nanos, long cpuNanos, long enrolled, long enrollFailed, long sent, long accepted, long peers, long bytesIn, long bytesOut,
      long commands, Map<String, Long> errors, long[] latency, StreamStats.Snapshot streams) {}

  void heartbeat(Reply r, long nanos, int bytesOutOfRequest) {
    sent.increment();
    bytesOut.add(bytesOutOfRequest);
    bytesIn.add(r.bytesIn());
    if (r.error() == null) accepted.increment();
    else error(r.error());
    latency.incrementAndGet(bucket(nanos / 1000));
  }

  /** The histogram bucket of a duration in microseconds. */
  static int bucket(long micros) {
    long us = Math.max(1, micros);
    return (int) Math.min(BUCKETS - 1, 1 + (long) (Math.log(us) / LOG_GROWTH));
  }

  /** A simulated ingress node moved from routes version {@code before} (null: none) to {@code now}. */
  void ingressApplied(String before, String now, long atMs) {
    if (before != null) ingressVersions.computeIfAbsent(before, k -> new LongAdder()).decrement();
    ingressVersions.computeIfAbsent(now, k -> new LongAdder()).increment();
    ingressLastMs.accumulate(atMs);
    ingressVersions.values().removeIf(a -> a.sum() == 0); // the versions no node holds any more (a handful: one per route change)
  }

  /** With --ingress-tag, after {@code separator}: {@code ingress routes v7=40 v8=10 (latest applied at T ms)}; else nothing. */
  String ingress(String separator) {
    if (ingressVersions.isEmpty()) return "";
    StringBuilder sb = new StringBuilder(separator).append("ingress routes");
    new TreeMap<>(ingressVersions).forEach((v, n) -> sb.append(" v").append(v).append('=').append(n.sum()));
    return sb.append(" (latest applied at ").append(ingressLastMs.get()).append(" ms)").toString();
  }

  void error(String kind) {
    errors.computeIfAbsent(kind, k -> new LongAdder()).increment();
  }

  void command(CommandLedger.Result r) {
    commands.increment();
    commandsByKind.computeIfAbsent(r.kind() + ":" + r.status(), k -> new LongAdder()).increment();
  }

  Snapshot snapshot() {
    Map<String, Long> e = new TreeMap<>();
    errors.forEach((k, v) -> e.put(k, v.sum()));
    long[] l = new long[BUCKETS];
    for (int i = 0; i < BUCKETS; i++) l[i] = latency.get(i);
    return new Snapshot(System.nanoTime(), cpuNanos(), enrolled.sum(), enrollFailed.sum(), sent.sum(), accepted.sum(), peersReceived.sum(), bytesIn.sum(),
        bytesOut.sum(), commands.sum(), e, l, streams == null ? null : streams.snapshot());
  }

  /** The line printed every period: what happened between {@code a} and {@code b}. */
  static String period(Snapshot a, Snapshot b, long elapsedSeconds, int nodes) {
    double secs = Math.max(1e-3, (b.nanos() - a.nanos()) / 1e9);
    long[] lat = diff(a.latency(), b.latency());
    return String.format(Locale.ROOT,
        "[sim %5ds] enrolled %d/%d | %.1f hb/s (%d sent, %d accepted) | p50 %s p99 %s p99.9 %s | errors: %s | peers received %d | in %s out %s"
            + " | cpu %.0f%% of one core, heap %s",
        elapsedSeconds, b.enrolled(), nodes, (b.accepted() - a.accepted()) / secs, b.sent() - a.sent(), b.accepted() - a.accepted(),
        ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99)), ms(quantile(lat, 0.999)), errors(a.errors(), b.errors()), b.peers() - a.peers(),
        bytes(b.bytesIn() - a.bytesIn()), bytes(b.bytesOut() - a.bytesOut()), (b.cpuNanos() - a.cpuNanos()) / 1e9 / secs * 100,
        bytes(ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed())) + streams(a, b, " | ");
  }

  /** With --certificates, the totals so far (after {@code separator}): adopted, deferred, refused; else nothing. */
  String certificates(String separator) {
    long adopted = certificates.sum();
    long deferred = certificatesDeferred.sum();
    long refused = certificatesRefused.sum();
    if (adopted + deferred + refused == 0) return presence().isEmpty() ? "" : separator + presence().substring(2);
    return separator + "certificates adopted " + adopted + " (deferred " + deferred + ", refused " + refused + "), revocation lists applied "
        + revocationUpdates.sum() + " (latest at " + revocationLastMs.get() + " ms), latest adopted at " + certificateLastMs.get()
        + " ms, holding an expired one " + expiredNow.values().stream().mapToInt(Integer::intValue).sum() + presence() + ", pairs checked " + pairsChecked.sum()
        + " failed " + pairsFailed.sum() + (lastPairFailure == null ? "" : " (latest: " + lastPairFailure + ")");
  }

  /** With --control, once a node went offline: {@code , offline O, returned R current C (the last T s after its return), their pairs P failed F}. */
  String presence() {
    long back = returned.sum();
    long off = offlineNow.sum();
    if (back == 0 && off == 0) return "";
    long max = recoveryMaxMs.get();
    return ", offline " + off + ", returned " + back + " current " + recovered.sum()
        + (max < 0 ? "" : String.format(Locale.ROOT, " (the last %.1f s after its return)", max / 1000.0)) + ", pairs with returned nodes "
        + returnedPairsChecked.sum() + " failed " + returnedPairsFailed.sum();
  }

  /** The watch streams' part of a line (after {@code separator}), or nothing without {@code --watch}. */
  private static String streams(Snapshot a, Snapshot b, String separator) {
    if (b.streams() == null) return "";
    return separator + StreamStats.describe(a.streams() == null ? StreamStats.zero() : a.streams(), b.streams());
  }

  /**
   * The final line: totals since the start, and, when every node had enrolled before the end, the latency of the
   * steady window from that moment on (enrollment's own load excluded).
   */
  String total(Snapshot start, Snapshot allEnrolled, Snapshot end, int nodes) {
    long cpuNanos = end.cpuNanos() - start.cpuNanos();
    double secs = Math.max(1e-3, (end.nanos() - start.nanos()) / 1e9);
    long[] lat = diff(start.latency(), end.latency());
    Map<String, Long> byKind = new TreeMap<>();
    commandsByKind.forEach((k, v) -> byKind.put(k, v.sum()));
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long heap = mem.getHeapMemoryUsage().getUsed();
    return String.format(Locale.ROOT,
        "[sim] done after %.1f s: %d/%d nodes enrolled (%d failed, %d attempts), %d heartbeats sent, %d accepted (%.1f/s), "
            + "latency p50 %s p99 %s p99.9 %s max %s, %s, errors: %s, peers received %d, bytes in %s out %s, commands executed %d%s, "
            + "process cpu %.1f s (%.0f%% of one core), heap used %s",
        secs, end.enrolled(), nodes, end.enrollFailed(), enrollAttempts.sum(), end.sent(), end.accepted(), end.accepted() / secs,
        ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99)), ms(quantile(lat, 0.999)), ms(quantile(lat, 1.0)), steady(allEnrolled, end),
        errors(Map.of(), end.errors()), end.peers(),
        bytes(end.bytesIn()), bytes(end.bytesOut()), end.commands(), byKind.isEmpty() ? "" : " " + byKind,
        cpuNanos / 1e9, cpuNanos / 1e9 / secs * 100, bytes(heap)) + streams(start, end, ", ") + certificates(", ") + ingress(", ");
  }

  /** The steady window's latency, from the moment every node had enrolled until the end. */
  private static String steady(Snapshot allEnrolled, Snapshot end) {
    if (allEnrolled == null) return "steady window (all enrolled) none";
    long[] lat = diff(allEnrolled.latency(), end.latency());
    return String.format(Locale.ROOT, "steady window (all enrolled, %.0f s) p50 %s p99 %s p99.9 %s max %s", (end.nanos() - allEnrolled.nanos()) / 1e9,
        ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99)), ms(quantile(lat, 0.999)), ms(quantile(lat, 1.0)));
  }

  /** CPU time of the whole process so far (0 where the JVM cannot tell). */
  static long cpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) return Math.max(0, os.getProcessCpuTime());
    return 0;
  }

  static long[] diff(long[] a, long[] b) {
    long[] d = new long[b.length];
    for (int i = 0; i < b.length; i++) d[i] = b[i] - a[i];
    return d;
  }

  /** The upper bound of the bucket holding quantile {@code q}, in microseconds; -1 when empty. */
  static double quantile(long[] buckets, double q) {
    long total = 0;
    for (long c : buckets) total += c;
    if (total == 0) return -1;
    long rank = Math.max(1, (long) Math.ceil(q * total));
    long seen = 0;
    for (int i = 0; i < buckets.length; i++) {
      seen += buckets[i];
      if (seen >= rank) return Math.pow(GROWTH, i);
    }
    return Math.pow(GROWTH, buckets.length);
  }

  static String ms(double micros) {
    if (micros < 0) return "-";
    return String.format(Locale.ROOT, micros < 10_000 ? "%.2f ms" : "%.0f ms", micros / 1000);
  }

  static String errors(Map<String, Long> a, Map<String, Long> b) {
    StringBuilder sb = new StringBuilder();
    b.forEach((k, v) -> {
      long d = v - a.getOrDefault(k, 0L);
      if (d > 0) sb.append(sb.length() == 0 ? "" : " ").append(k).append('=').append(d);
    });
    return sb.length() == 0 ? "none" : sb.toString();
  }

  static String bytes(long n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return String.format(Locale.ROOT, "%.1f KiB", n / 1024.0);
    if (n < 1024L * 1024 * 1024) return String.format(Locale.ROOT, "%.1f MiB", n / 1024.0 / 1024);
    return String.format(Locale.ROOT, "%.2f GiB", n / 1024.0 / 1024 / 1024);
  }
}
