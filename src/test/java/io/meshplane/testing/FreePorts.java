package io.meshplane.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free TCP ports on loopback, for components that cannot bind port 0 (Hazelcast members list each
 * other). They are picked below Linux's ephemeral range (32768-60999): a port from that range, free
 * when chosen, can be taken by any outgoing connection (an HTTP client, a database connection) before
 * the member binds it seconds later. No port is handed out twice in one JVM, and test JVMs running side
 * by side (surefire's forks) pick from disjoint slices of the range.
 */
public final class FreePorts {
  /** Surefire's fork number (1, 2, …; pom.xml): each test JVM picks from its own slice of the range. */
  private static final int FORK = Math.max(1, Math.min(4, Integer.getInteger("test.fork", 1)));
  private static final int FROM = 20_000 + (FORK - 1) * 3_000;
  private static final int TO = FROM + 3_000;
  private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();

  private FreePorts() {}

  public static int next() {
    for (int attempt = 0; attempt < 1000; attempt++) {
      int port = ThreadLocalRandom.current().nextInt(FROM, TO);
      if (!GIVEN.add(port)) continue;
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        return port;
      } catch (IOException inUse) {
        // taken by something else: try another
      }
    }
    throw new IllegalStateException("no free port found in " + FROM + "-" + TO);
  }
}
