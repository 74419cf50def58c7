package io.meshplane.agent;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What the agent's ingress proxy adds to a request: latency p50/p99 through the ingress listener against
 * the same target directly, and the process CPU per request of each (the difference is the proxy's).
 * One JVM: the target (its own Vert.x), the agent (its own, one event loop) and a blocking client on one
 * keep-alive connection per run, sequential requests (latency, not throughput).
 *
 * <p>Run: {@code mvn -q test-compile && java -cp target/meshplane.jar:target/test-classes:$(cat cp.txt)
 * io.meshplane.agent.IngressProxyBench [requests]} (load-tests/README.md).
 */
public final class IngressProxyBench {
  private IngressProxyBench() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    Path state = Files.createTempDirectory("ingress-bench");
    OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    try (IngressFixture.Target target = new IngressFixture.Target("t"); IngressFixture f = new IngressFixture(state, IngressFixture.plain())) {
      f.nodeId();
      f.serve("1", IngressFixture.route(IngressFixture.routeId(), "app.example.com", "/", IngressFixture.MESH_A, target.port()));
      for (int round = 0; round < 2; round++) {
        boolean report = round == 1; // the first round warms both paths up
        long[] direct = run(target.port(), n, os);
        long[] proxied = run(f.port(), n, os);
        if (report) {
          System.out.printf("requests per run: %d (sequential, one keep-alive connection)%n", n);
          print("direct ", direct, n);
          print("proxied", proxied, n);
          System.out.printf("added by the proxy: p50 %.1f µs, p99 %.1f µs, CPU %.1f µs per request%n",
              (pct(proxied, 50) - pct(direct, 50)) / 1e3, (pct(proxied, 99) - pct(direct, 99)) / 1e3,
              (proxied[n] - direct[n]) / 1e3 / n);
        }
      }
    }
  }

  /** n latencies in ns, then the process CPU ns of the run at index n. */
  private static long[] run(int port, int n, OperatingSystemMXBean os) throws Exception {
    long[] out = new long[n + 1];
    try (IngressFixture.Raw c = new IngressFixture.Raw(port)) {
      long cpu0 = os.getProcessCpuTime();
      for (int i = 0; i < n; i++) {
        long t0 = System.nanoTime();
        IngressFixture.Answer a = c.exchange("GET", "/bench", "app.example.com");
        out[i] = System.nanoTime() - t0;
        if (a.status() != 200) throw new IllegalStateException("status " + a.status());
      }
      out[n] = os.getProcessCpuTime() - cpu0;
    }
    return out;
  }

  private static double pct(long[] r, int p) {
    long[] sorted = Arrays.copyOf(r, r.length - 1);
    Arrays.sort(sorted);
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
  }

  private static void print(String what, long[] r, int n) {
    System.out.printf("%s p50 %.1f µs, p99 %.1f µs, CPU %.1f µs per request (client + target%s)%n", what, pct(r, 50) / 1e3, pct(r, 99) / 1e3,
        r[n] / 1e3 / n, what.startsWith("proxied") ? " + proxy" : "");
  }
}
