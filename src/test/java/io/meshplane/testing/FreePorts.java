package io.meshplane.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Free TCP ports on loopback, for components that cannot bind port 0 (Hazelcast members list each other). */
public final class FreePorts {
  private FreePorts() {}

  public static int next() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
