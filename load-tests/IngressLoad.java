import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The load client of load-tests/ingress-drain.sh, run with the JDK's source launcher
 * ({@code java IngressLoad.java EDGE_A EDGE_B HOST RATE SECONDS STOPFILE}): RATE requests/s of
 * {@code GET /} for HOST spread over two ingress edges by RATE/5 workers (at least 20), each on its own
 * keep-alive connection to one edge (raw HTTP/1.1 on a socket: no client library retries or hides
 * anything). Each worker sends on a fixed schedule (every WORKERS/RATE seconds, offset from the others)
 * whatever the previous answer took, so the rate does not fall when answers slow down (an open loop, as
 * far as a worker's own answer allows); a request sent more than 100 ms after its slot counts as
 * {@code late} (the client, not the edge, could not keep up).
 *
 * <p>With READY_A and READY_B (each edge agent's {@code /readyz/ingress} URL) the client acts as a
 * balancer with health checks: it checks both every 100 ms and opens a new connection on an edge that
 * answered 503 only when the other did too (a connection already open is used to the end).
 *
 * <p>What counts: a request answered 2xx is {@code ok}; a connection refused is {@code refused} and
 * the request goes to the other edge (the only retry, as a load balancer does); an answer with
 * {@code Connection: close} closes the connection after the answer ({@code closed_by_edge}, normal in
 * a drain). Anything else is {@code failed}: a non-2xx, a reset or an end of stream before a whole answer
 * ({@code resets}), a time-out. Prints one summary line of key=value pairs at the end, and a progress
 * line each second to stderr. Stops after SECONDS or when STOPFILE exists.
 */
public final class IngressLoad {
  static final AtomicLong sent = new AtomicLong(), ok = new AtomicLong(), failed = new AtomicLong(), resets = new AtomicLong(),
      refused = new AtomicLong(), closedByEdge = new AtomicLong(), non2xx = new AtomicLong(), timeouts = new AtomicLong();
  static final AtomicLong[] perEdge = {new AtomicLong(), new AtomicLong()};
  static final AtomicLong late = new AtomicLong();
  /** Failures on a connection's first request (opened for it) and on a reused keep-alive connection. */
  static final AtomicLong failedFresh = new AtomicLong(), failedReused = new AtomicLong();
  static final java.util.concurrent.ConcurrentHashMap<String, AtomicLong> why = new java.util.concurrent.ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    InetSocketAddress[] edges = {address(args[0]), address(args[1])};
    String host = args[2];
    double rate = Double.parseDouble(args[3]);
    long seconds = Long.parseLong(args[4]);
    Path stop = Path.of(args[5]);
    if (args.length >= 8) {
      Thread checks = new Thread(() -> check(new String[] {args[6], args[7]}, stop), "ready-checks");
      checks.setDaemon(true);
      checks.start();
    }
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    int WORKERS = (int) Math.max(20, Math.min(2_000, rate / 5));
    long periodNs = (long) (WORKERS * 1e9 / rate);
    Thread[] ts = new Thread[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
      int w = i;
      ts[i] = new Thread(() -> work(edges, w % 2, host, periodNs, w * periodNs / WORKERS, end, stop), "load-" + i);
      ts[i].start();
    }
    long last = 0;
    while (System.nanoTime() < end && !Files.exists(stop)) {
      Thread.sleep(1000);
      long s = sent.get();
      System.err.printf(Locale.ROOT, "sent=%d rate=%d/s ok=%d failed=%d refused=%d closed_by_edge=%d edge0=%d edge1=%d%n", s, s - last, ok.get(),
          failed.get(), refused.get(), closedByEdge.get(), perEdge[0].get(), perEdge[1].get());
      last = s;
    }
    for (Thread t : ts) t.join();
    System.out.printf(Locale.ROOT, "workers=%d sent=%d ok=%d failed=%d resets=%d non2xx=%d timeouts=%d refused_retried=%d closed_by_edge=%d late=%d edge0=%d edge1=%d%n",
        WORKERS, sent.get(), ok.get(), failed.get(), resets.get(), non2xx.get(), timeouts.get(), refused.get(), closedByEdge.get(),
        late.get(), perEdge[0].get(), perEdge[1].get());
    System.out.printf(Locale.ROOT, "failed_on_fresh_connection=%d failed_on_reused_connection=%d%n", failedFresh.get(), failedReused.get());
    why.forEach((k, v) -> System.out.printf(Locale.ROOT, "  %d x %s%n", v.get(), k));
  }

  static InetSocketAddress address(String hostPort) {
    int c = hostPort.lastIndexOf(':');
    return new InetSocketAddress(hostPort.substring(0, c), Integer.parseInt(hostPort.substring(c + 1)));
  }

  static void work(InetSocketAddress[] edges, int edge, String host, long periodNs, long offsetNs, long end, Path stop) {
    byte[] request = ("GET / HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: ingress-load\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    Socket socket = null;
    InputStream in = null;
    OutputStream out = null;
    int current = edge;
    boolean fresh = false;
    long next = System.nanoTime() + offsetNs;
    while (next < end && !Files.exists(stop)) {
      long wait = next - System.nanoTime();
      if (wait > 0) sleep(wait);
      else if (wait < -100_000_000L) late.incrementAndGet();
      next += periodNs;
      sent.incrementAndGet();
      boolean retried = false;
      while (true) {
        try {
          if (socket == null) {
            if (READY.get(current) == 0 && READY.get(1 - current) == 1) current = 1 - current; // the balancer's health check
            socket = new Socket();
            socket.setSoTimeout(10_000);
            socket.connect(edges[current], 2_000);
            fresh = true;
            in = new BufferedInputStream(socket.getInputStream());
            out = socket.getOutputStream();
          }
          out.write(request);
          out.flush();
          int status = answer(in);
          fresh = false;
          perEdge[current].incrementAndGet();
          if (status >= 200 && status < 300) {
            ok.incrementAndGet();
          } else {
            non2xx.incrementAndGet();
            failed.incrementAndGet();
          }
          if (CLOSE.get()) {
            closedByEdge.incrementAndGet();
            close(socket);
            socket = null;
          }
          break;
        } catch (ConnectException refusedHere) {
          close(socket);
          socket = null;
          if (retried) { // both edges refuse
            failed.incrementAndGet();
            break;
          }
          refused.incrementAndGet();
          current = 1 - current; // the only retry: a refused connection goes to the other edge
          retried = true;
        } catch (java.net.SocketTimeoutException slow) {
          timeouts.incrementAndGet();
          failed.incrementAndGet();
          close(socket);
          socket = null;
          break;
        } catch (IOException reset) {
          resets.incrementAndGet();
          (fresh ? failedFresh : failedReused).incrementAndGet();
          why.computeIfAbsent((fresh ? "fresh: " : "reused: ") + reset.getClass().getSimpleName() + " " + reset.getMessage(),
              k -> new AtomicLong()).incrementAndGet();
          failed.incrementAndGet();
          close(socket);
          socket = null;
          break;
        }
      }
    }
    close(socket);
  }

  /** Each edge's last health check (true until one says 503). */
  static final java.util.concurrent.atomic.AtomicIntegerArray READY = new java.util.concurrent.atomic.AtomicIntegerArray(new int[] {1, 1});

  static void check(String[] urls, Path stop) {
    java.net.http.HttpClient c = java.net.http.HttpClient.newBuilder().connectTimeout(java.time.Duration.ofSeconds(1)).build();
    while (!Files.exists(stop)) {
      for (int i = 0; i < 2; i++) {
        try {
          READY.set(i, c.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(urls[i])).timeout(java.time.Duration.ofSeconds(1)).build(),
              java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode() == 200 ? 1 : 0);
        } catch (IOException e) {
          READY.set(i, 0);
        } catch (InterruptedException e) {
          return;
        }
      }
      sleep(100_000_000L);
    }
  }

  /** Set by {@link #answer} (one per thread: each worker reads its own answers). */
  static final ThreadLocal<Boolean> CLOSE = ThreadLocal.withInitial(() -> false);

  /** Reads one whole answer (status line, headers, a Content-Length or chunked body); returns the status. */
  static int answer(InputStream in) throws IOException {
    String status = line(in);
    if (status == null) throw new IOException("end of stream before an answer");
    int code = Integer.parseInt(status.split(" ")[1]);
    long length = -1;
    boolean chunked = false;
    boolean close = false;
    for (String h; !(h = must(line(in))).isEmpty();) {
      String lower = h.toLowerCase(Locale.ROOT);
      if (lower.startsWith("content-length:")) length = Long.parseLong(lower.substring(15).trim());
      else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) chunked = true;
      else if (lower.startsWith("connection:") && lower.contains("close")) close = true;
    }
    if (chunked) {
      for (long n; (n = Long.parseLong(must(line(in)).split(";")[0].trim(), 16)) > 0;) {
        skip(in, n);
        line(in);
      }
      line(in);
    } else if (length > 0) {
      skip(in, length);
    }
    CLOSE.set(close);
    return code;
  }

  static String must(String line) throws IOException {
    if (line == null) throw new IOException("end of stream inside an answer");
    return line;
  }

  static String line(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int c; (c = in.read()) != '\n';) {
      if (c < 0) {
        if (sb.length() == 0) return null;
        throw new IOException("end of stream inside a line");
      }
      if (c != '\r') sb.append((char) c);
    }
    return sb.toString();
  }

  static void skip(InputStream in, long n) throws IOException {
    while (n > 0) {
      long k = in.skip(n);
      if (k <= 0) {
        if (in.read() < 0) throw new IOException("end of stream inside a body");
        k = 1;
      }
      n -= k;
    }
  }

  static void sleep(long ns) {
    try {
      Thread.sleep(ns / 1_000_000, (int) (ns % 1_000_000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static void close(Socket s) {
    if (s == null) return;
    try {
      s.close();
    } catch (IOException ignored) {
      // closing
    }
  }
}
