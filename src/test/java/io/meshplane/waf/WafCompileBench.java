package io.meshplane.waf;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Locale;

/**
 * What a traffic-policy PUT costs the coordinator's {@code waf} pool: {@link Waf#compile} of a document
 * and its tests, CPU time per document (the thread's own, so the machine's other load does not count),
 * for three documents: custom rules only, the managed set at paranoia 2, and the managed set with the
 * most per-route overrides a document may have (32: 33 programs). Run with
 * {@code java -cp target/classes:target/test-classes:$(cat cp.txt) io.meshplane.waf.WafCompileBench [rounds]}.
 */
public final class WafCompileBench {
  private WafCompileBench() {}

  public static void main(String[] args) {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    String custom = "{\"rules\": [" + rule("a", "request.path.startsWith('/admin')") + "," + rule("b", "'q' in request.query") + "],"
        + " \"tests\": [{\"name\": \"t\", \"expect\": \"deny\", \"request\": {\"target\": \"/admin\"}}]}";
    String managed = "{\"managed\": {\"paranoia\": 2}, \"tests\": [{\"name\": \"t\", \"expect\": \"deny\", \"request\": {\"target\": \"/?q=%3Cscript%3E\"}}]}";
    StringBuilder routes = new StringBuilder("{\"managed\": {\"paranoia\": 1}, \"routes\": {");
    for (int i = 0; i < WafDocument.MAX_ROUTES; i++) {
      routes.append(i == 0 ? "" : ",").append("\"ir_01m8jbcb7keyc0xhjsdgc6ch").append((char) ('a' + i % 26)).append((char) ('a' + i / 26))
          .append("\": {\"paranoia\": 2, \"disable\": [\"mp-xss-001\"]}");
    }
    routes.append("}}");
    for (String[] doc : new String[][] {{"custom rules only (2 rules, 1 test)", custom}, {"managed set, paranoia 2 (1 test)", managed},
        {"managed set + 32 route overrides (33 programs)", routes.toString()}}) {
      run(doc[0], doc[1], rounds);
    }
  }

  private static String rule(String id, String expression) {
    return "{\"id\": \"" + id + "\", \"expression\": \"" + expression + "\", \"action\": {\"type\": \"deny\", \"status\": 403}}";
  }

  private static void run(String name, String doc, int rounds) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    for (int i = 0; i < 3; i++) Waf.compile(doc).test(); // warm-up
    long cpu = mx.getCurrentThreadCpuTime();
    long wall = System.nanoTime();
    for (int i = 0; i < rounds; i++) Waf.compile(doc).test();
    double cpuMs = (mx.getCurrentThreadCpuTime() - cpu) / 1e6 / rounds;
    double wallMs = (System.nanoTime() - wall) / 1e6 / rounds;
    System.out.printf(Locale.ROOT, "%-50s %8.2f ms CPU  %8.2f ms wall  per compile + tests (%d rounds)%n", name, cpuMs, wallMs, rounds);
  }
}
