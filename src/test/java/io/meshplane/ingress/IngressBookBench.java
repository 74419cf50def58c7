package io.meshplane.ingress;

import io.meshplane.changes.ChangeLog;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.management.ManagementFactory;

/**
 * What the ingress routes cost a heartbeat (not a test: run by hand, see load-tests/RESULTS.md): a book
 * of N nodes in one team+environment, of which 1 % carry tag:edge, and R routes served by tag:edge;
 * the thread CPU and bytes allocated per answer (with the heartbeat's 256-byte answer buffer) for a node without routes (almost every node), an
 * ingress node reporting its current version, and an ingress node behind (a full answer, the first
 * after a change, then cached); what applying one route change costs the feed's thread; and the
 * ingress gauges' listing of the nodes that serve routes.
 *
 * <p>Run: {@code mvn -q test-compile && java -cp target/meshplane.jar:target/test-classes
 * io.meshplane.ingress.IngressBookBench [nodes, default 100000] [routes, default 50]}
 */
public final class IngressBookBench {
  private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int r = args.length > 1 ? Integer.parseInt(args[1]) : 50;
    IngressBook book = new IngressBook(s -> io.vertx.core.Future.succeededFuture(java.util.List.of()));
    long seq = 1;
    for (int i = 0; i < n; i++) {
      JsonArray tags = new JsonArray().add(i % 100 == 0 ? "tag:edge" : "tag:t" + (i % 50));
      book.apply(new ChangeLog.Entry(seq++, "enroll", new JsonObject().put("id", id(i)).put("team", "bench").put("environment", "prod")
          .put("name", "n" + i).put("address", "100.64." + (i / 250) + "." + (i % 250 + 1)).put("tags", tags), 0));
    }
    for (int i = 1; i <= r; i++) {
      book.apply(new ChangeLog.Entry(seq++, "work", new JsonObject().put("node", id(i)).put("services", new JsonArray().add("web:8080")), 0));
    }
    int changes = 20;
    long cpu = 0;
    long bytes = 0;
    for (int round = 0; round < 5; round++) {
      // JIT warm-up rounds, then the measured (last) one
      cpu = THREADS.getCurrentThreadCpuTime();
      bytes = THREADS.getCurrentThreadAllocatedBytes();
      for (int v = 1; v <= changes; v++) book.apply(new ChangeLog.Entry(seq++, "ingress", routeSet(r, round * changes + v), 0));
    }
    changes = changes * 5;
    System.out.printf("%d nodes, %d routes: one route change applied on the feed's thread: %.1f us, %d bytes%n", n, r,
        (THREADS.getCurrentThreadCpuTime() - cpu) / 1000.0 / 20, (THREADS.getCurrentThreadAllocatedBytes() - bytes) / 20);
    String current = Integer.toString(changes);
    for (int round = 0; round < 5; round++) {
      // the gauges' listing of the ingress nodes (a worker, only after a node or route change), wall clock
      long t0 = System.nanoTime();
      int serving = book.servingNodes().size();
      if (round == 4) System.out.printf("the ingress gauges' listing of the %d ingress nodes: %.2f ms%n", serving, (System.nanoTime() - t0) / 1e6);
    }
    for (int round = 0; round < 5; round++) {
      measure(book, "a node without routes, none reported", id(1), "", n, round == 4);
      measure(book, "an ingress node reporting its version", id(0), current, n, round == 4);
      measure(book, "an ingress node behind (cached full)", id(0), "1", n, round == 4);
    }
  }

  private static void measure(IngressBook book, String what, String node, String reported, int times, boolean print) {
    long cpu = THREADS.getCurrentThreadCpuTime();
    long bytes = THREADS.getCurrentThreadAllocatedBytes();
    int size = 0;
    for (int i = 0; i < times; i++) {
      // as the heartbeat does: a fresh 256-byte answer buffer (counted in the bytes allocated)
      Buffer out = Buffer.buffer(256);
      book.answer(node, reported, out);
      size = out.length();
    }
    if (print) {
      System.out.printf("%-42s %7.0f ns, %6d bytes allocated, %6d bytes written%n", what,
          (THREADS.getCurrentThreadCpuTime() - cpu) / (double) times, (THREADS.getCurrentThreadAllocatedBytes() - bytes) / times, size);
    }
  }

  private static JsonObject routeSet(int r, int version) {
    JsonArray routes = new JsonArray();
    for (int i = 1; i <= r; i++) {
      routes.add(new JsonObject().put("id", "ir_01m8000000000000000000" + String.format("%04d", i)).put("position", i)
          .put("hostname", "app" + i + ".example.com").put("path_prefix", "/").put("exposure", "public").put("tls", "acme")
          .put("ingress_tag", "tag:edge").put("target", new JsonObject().put("node", id(i)).put("service", "web")));
    }
    return new JsonObject().put("team", "bench").put("environment", "prod").put("version", version).put("routes", routes);
  }

  private static String id(int i) {
    return "nd_01m8" + String.format("%022d", i);
  }
}
