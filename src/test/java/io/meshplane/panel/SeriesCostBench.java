package io.meshplane.panel;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Deterministic figures of the overview's series (not a test: run by hand, see load-tests/RESULTS.md):
 * the encoded size of a replica's two full rings at 100,000 nodes, the thread CPU time of one sample's
 * encoding (what each replica does every panel.series_interval), and of one series request's decoding
 * and merge with 3 and 10 replicas' entries (what the first request of each new point costs; later
 * ones are answered from the kept merge).
 *
 * <p>Run: {@code mvn -q test-compile && java -cp target/meshplane.jar:target/test-classes io.meshplane.panel.SeriesCostBench}
 */
public final class SeriesCostBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  private static final long STEP = 10_000;

  public static void main(String[] args) {
    for (int round = 1; round <= 3; round++) {
      System.out.printf("round %d%n", round);
      for (int replicas : new int[] {3, 10}) {
        List<byte[]> fine = new ArrayList<>();
        List<byte[]> coarse = new ArrayList<>();
        for (int r = 0; r < replicas; r++) {
          SeriesRing[] rings = busy(r == 0, replicas);
          fine.add(rings[0].encode(1_000_359));
          coarse.add(rings[1].encode(1_000_359 / 30));
        }
        int bytes = fine.get(0).length + coarse.get(0).length;
        int other = fine.get(1).length + coarse.get(1).length;
        SeriesRing[] one = busy(true, replicas);
        long encode = cpu(2000, () -> {
          one[0].encode(1_000_359);
          one[1].encode(1_000_359 / 30);
        });
        long merge1h = cpu(500, () -> merge(fine, "1h", STEP, 360, 1_000_359));
        long merge24h = cpu(500, () -> merge(coarse, "24h", STEP * 30, 288, 1_000_359 / 30));
        System.out.printf("  %2d replicas: entry of the oldest replica %,d bytes, of another %,d bytes; a sample's encoding %.1f µs;"
            + " a request's merge %.2f ms (1h), %.2f ms (24h)%n", replicas, bytes, other, encode / 1000.0, merge1h / 1e6, merge24h / 1e6);
      }
    }
  }

  /** Full rings of a replica taking its share of 100,000 nodes beating every 30 s; the oldest also holds the counts. */
  private static SeriesRing[] busy(boolean oldest, int replicas) {
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    SeriesRing fine = new SeriesRing(STEP, 360);
    SeriesRing coarse = new SeriesRing(STEP * 30, 288);
    long perStep = 100_000 / 30 * 10 / replicas;
    for (long b = 1_000_359 - 288 * 30; b <= 1_000_359; b++) {
      long hb = perStep + rnd.nextLong(-50, 50);
      int ops = rnd.nextInt(20) == 0 ? 1 : 0;
      fine.add(b, hb, ops, 0, 0);
      coarse.add(b / 30, hb, ops, 0, 0);
      if (oldest) {
        fine.counts(b, 99_000 + rnd.nextInt(100), 800 + rnd.nextInt(50), 100);
        coarse.counts(b / 30, 99_000 + rnd.nextInt(100), 800 + rnd.nextInt(50), 100);
      }
    }
    return new SeriesRing[] {fine, coarse};
  }

  private static void merge(List<byte[]> entries, String window, long step, int points, long last) {
    List<SeriesRing> rings = new ArrayList<>();
    for (byte[] e : entries) rings.add(SeriesRing.decode(e));
    SeriesMerge.merge(window, rings, step, points, last).encode();
  }

  /** Mean thread CPU time (ns) of {@code task} over {@code n} runs, after as many to warm up. */
  private static long cpu(int n, Runnable task) {
    for (int i = 0; i < n; i++) task.run();
    long start = THREADS.getCurrentThreadCpuTime();
    for (int i = 0; i < n; i++) task.run();
    return (THREADS.getCurrentThreadCpuTime() - start) / n;
  }
}
