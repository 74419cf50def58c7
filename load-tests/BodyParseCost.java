import io.meshplane.heartbeat.HeartbeatRequest;
import io.meshplane.http.RequestTarget;
import io.meshplane.http.StrictJson;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;

/**
 * What the request checks of the heartbeat path cost, per request, in figures a noisy machine does not
 * blur: bytes allocated (the thread's allocation counter) and CPU time of this thread, over a fixed
 * number of iterations after a warm-up, for
 *
 * <ol>
 *   <li>Vert.x's own parse of the benchmark's heartbeat body (what the service did before the strict
 *       parser: {@code Buffer.toJsonValue()});
 *   <li>the strict parse ({@code StrictJson.parseObject}: UTF-8 check, Jackson token stream, tree);
 *   <li>the heartbeat's field validation ({@code HeartbeatRequest.parse}, which includes the telemetry
 *       bounds) on the parsed object;
 *   <li>the request-target check of the heartbeat's path ({@code RequestTarget.check}).
 * </ol>
 *
 * Usage: {@code java -cp target/meshplane.jar load-tests/BodyParseCost.java [ITERATIONS]} (default
 * 2,000,000; the warm-up is the same count). Single-threaded, no I/O.
 */
public class BodyParseCost {
  static final String BODY = "{\"endpoints\":[\"198.51.100.7:41641\"],\"routes\":[\"10.1.0.0/24\"],"
      + "\"telemetry\":{\"agent_version\":\"1.4.0\",\"uptime_s\":812},\"known\":{\"peers\":0,\"acl\":0}}";
  static final String PATH = "/v1/nodes/nd_01m83tfwhfkj094wxdzmmycbhj/heartbeat";
  static volatile Object sink;

  interface Step {
    Object run();
  }

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
    byte[] bytes = BODY.getBytes(StandardCharsets.UTF_8);
    Buffer buffer = Buffer.buffer(bytes);
    JsonObject parsed = StrictJson.parseObject(bytes);
    System.out.printf("heartbeat body: %d bytes; %,d iterations after as many to warm up%n", bytes.length, n);
    System.out.printf("%-44s %14s %14s%n", "step", "bytes/request", "CPU ns/request");
    measure("Vert.x parse (before)", n, () -> buffer.toJsonValue());
    measure("strict parse (now): getBytes + UTF-8 + parse", n, () -> StrictJson.parseObject(buffer.getBytes()));
    measure("heartbeat validation incl. telemetry bounds", n, () -> HeartbeatRequest.parse(parsed));
    measure("request target check of the path", n, () -> RequestTarget.check(PATH, null));
  }

  static void measure(String name, int n, Step step) {
    for (int i = 0; i < n; i++) sink = step.run();
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    long a0 = threads.getThreadAllocatedBytes(id);
    long c0 = threads.getCurrentThreadCpuTime();
    for (int i = 0; i < n; i++) sink = step.run();
    long c1 = threads.getCurrentThreadCpuTime();
    long a1 = threads.getThreadAllocatedBytes(id);
    System.out.printf("%-44s %14.1f %14.1f%n", name, (a1 - a0) / (double) n, (c1 - c0) / (double) n);
  }
}
