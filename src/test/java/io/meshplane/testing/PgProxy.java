package io.meshplane.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on loopback in front of the real PostgreSQL, to make the database unreachable and
 * reachable again during a test: {@link #cut()} closes the listener and every proxied connection
 * (clients see refused connections), {@link #restore()} listens again on the same port.
 */
public final class PgProxy implements AutoCloseable {
  private final int port;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private volatile ServerSocket server;

  public PgProxy() {
    this.port = FreePorts.next();
    restore();
  }

  public int port() {
    return port;
  }

  public synchronized void restore() {
    if (server != null) return;
    try {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      server = s;
      Thread t = new Thread(() -> acceptLoop(s), "pg-proxy-accept");
      t.setDaemon(true);
      t.start();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  public synchronized void cut() {
    ServerSocket s = server;
    server = null;
    closeQuietly(s);
    for (Socket sock : sockets) closeQuietly(sock);
    sockets.clear();
  }

  private void acceptLoop(ServerSocket s) {
    while (!s.isClosed()) {
      try {
        Socket client = s.accept();
        Socket upstream = new Socket(TestDatabase.HOST, TestDatabase.PORT);
        synchronized (this) {
          // a cut() between accept() and here cleared the set before these were in it: they would outlive the cut
          if (server != s) {
            closeQuietly(client);
            closeQuietly(upstream);
            return;
          }
          sockets.add(client);
          sockets.add(upstream);
        }
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        return;
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16384];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException ignored) {
        // connection cut
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        sockets.remove(from);
        sockets.remove(to);
      }
    }, "pg-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(java.io.Closeable c) {
    if (c == null) return;
    try {
      c.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  @Override
  public void close() {
    cut();
  }
}
