package io.meshplane.waf;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Figures of WAF evaluation (not a test: run by hand, see load-tests/RESULTS.md): the managed rule set
 * at paranoia 1 and 2 over the attack and benign corpora, per request (the request model built and
 * every rule evaluated, as the edge will): wall-clock p50/p99/max in microseconds, and thread CPU time
 * per request. One thread, after a warm-up.
 *
 * <p>Run (see load-tests/RESULTS.md for the classpath; {@code -Dmeshplane.waf.prefilter=false} turns the literal prefilter off): {@code mvn -q package -DskipTests && mvn -q test-compile && java -Xmx512m -cp
 * target/meshplane.jar:target/test-classes io.meshplane.waf.WafEvalBench}
 */
public final class WafEvalBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  public static void main(String[] args) {
    List<Corpus.Sample> attacks = Corpus.load("attacks.jsonl");
    List<Corpus.Sample> benign = Corpus.load("benign.jsonl");
    boolean prefilter = !"false".equals(System.getProperty("meshplane.waf.prefilter"));
    System.out.println("literal prefilter " + (prefilter ? "on" : "off (-Dmeshplane.waf.prefilter=false)"));
    for (int level = 1; level <= 2; level++) {
      WafProgram p = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.paranoia(level)));
      for (List<Corpus.Sample> c : List.of(benign, attacks)) {
        long r0 = RegexPrefilter.Subject.runs.get()[0];
        run(p, c);
        System.out.printf("paranoia %d, %s corpus: %.2f regex automaton runs per request%n", level, c == benign ? "benign" : "attack",
            (RegexPrefilter.Subject.runs.get()[0] - r0) / (double) c.size());
      }
      for (int warm = 0; warm < 30; warm++) {
        run(p, attacks);
        run(p, benign);
      }
      for (int round = 0; round < 3; round++) {
        report("paranoia " + level + " (" + p.size() + " rules), benign corpus", p, benign);
        report("paranoia " + level + " (" + p.size() + " rules), attack corpus", p, attacks);
      }
    }
  }

  private static long[] run(WafProgram p, List<Corpus.Sample> samples) {
    long[] wall = new long[samples.size()];
    for (int i = 0; i < samples.size(); i++) {
      long t0 = System.nanoTime();
      p.evaluate(samples.get(i).request(), RateLimiter.NONE);
      wall[i] = System.nanoTime() - t0;
    }
    return wall;
  }

  private static void report(String what, WafProgram p, List<Corpus.Sample> samples) {
    List<Long> all = new ArrayList<>();
    long cpu0 = THREADS.getCurrentThreadCpuTime();
    int rounds = 20;
    for (int r = 0; r < rounds; r++) for (long w : run(p, samples)) all.add(w);
    long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
    long[] w = all.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(w);
    System.out.printf("%-48s n=%d  p50 %.1f µs  p99 %.1f µs  max %.1f µs  cpu %.1f µs/request%n", what, w.length,
        w[w.length / 2] / 1e3, w[(int) (w.length * 0.99)] / 1e3, w[w.length - 1] / 1e3, cpu / 1e3 / w.length);
  }
}
