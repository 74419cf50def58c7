package io.meshplane.agent;

import io.meshplane.common.Ids;
import io.meshplane.testing.Await;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What the ingress tests share: an agent with an ingress listener driven by a {@link FakeCoordinator}
 * whose answers carry the routes (and commands) the test sets, target servers standing in for mesh
 * nodes (reached through {@code --ingress-target-override 100.64.0.x=127.0.0.1}), and a raw HTTP/1.1
 * client that sees exactly what goes over a connection (headers, {@code Connection: close}, a clean end
 * or a reset).
 */
final class IngressFixture implements AutoCloseable {
  static final String MESH_A = "100.64.0.3";
  static final String MESH_B = "100.64.0.4";

  /** A target server: answers {@code {server, path, headers}} with some hop-by-hop headers of its own; {@code /slow} waits for {@link #release}. */
  static final class Target implements AutoCloseable {
    final String name;
    final Vertx vertx = Vertx.vertx();
    final HttpServer server;
    final AtomicInteger requests = new AtomicInteger();
    final AtomicReference<Map<String, String>> lastHeaders = new AtomicReference<>();
    final ConcurrentLinkedQueue<Promise<Void>> slow = new ConcurrentLinkedQueue<>();
    final AtomicInteger slowWaiting = new AtomicInteger();

    Target(String name) throws Exception {
      this.name = name;
      server = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(body -> {
        requests.incrementAndGet();
        Map<String, String> h = new TreeMap<>();
        req.headers().forEach(e -> h.merge(e.getKey().toLowerCase(Locale.ROOT), e.getValue(), (a, b) -> a + "|" + b));
        lastHeaders.set(h);
        JsonObject answer = new JsonObject().put("server", name).put("path", req.path()).put("headers", new JsonObject(new java.util.HashMap<>(h)))
            .put("body_bytes", body.length());
        Runnable respond = () -> req.response().putHeader("Connection", "X-Upstream-Secret").putHeader("X-Upstream-Secret", "s")
            .putHeader("Keep-Alive", "timeout=5").putHeader("Proxy-Foo", "1").putHeader("X-Kept", "yes")
            .putHeader("Content-Type", "application/json").setStatusCode(req.path().startsWith("/status/") ? Integer.parseInt(req.path().substring(8)) : 200)
            .end(answer.encode());
        if (req.path().equals("/slow")) {
          Promise<Void> p = Promise.promise();
          p.future().onComplete(x -> respond.run());
          slow.add(p);
          slowWaiting.incrementAndGet();
        } else {
          respond.run();
        }
      })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    int port() {
      return server.actualPort();
    }

    /** Answers every /slow request waiting. */
    void release() {
      Promise<Void> p;
      while ((p = slow.poll()) != null) {
        Promise<Void> q = p;
        vertx.runOnContext(v -> q.tryComplete());
      }
    }

    @Override
    public void close() {
      try {
        vertx.close().await(5, TimeUnit.SECONDS);
      } catch (Exception e) {
        // best effort
      }
    }
  }

  /** One answer read off a raw connection. */
  record Answer(int status, Map<String, String> headers, String body) {
    boolean closing() {
      return "close".equalsIgnoreCase(headers.getOrDefault("connection", ""));
    }

    JsonObject json() {
      return new JsonObject(body);
    }
  }

  /** A raw HTTP/1.1 connection. */
  static final class Raw implements AutoCloseable {
    final Socket socket;
    final InputStream in;
    final OutputStream out;

    Raw(int port) throws IOException {
      this(new Socket("127.0.0.1", port));
    }

    Raw(Socket s) throws IOException {
      socket = s;
      socket.setSoTimeout(20_000);
      in = socket.getInputStream();
      out = socket.getOutputStream();
    }

    /** Sends {@code method path} with a Host and extra header lines ("Name: value"). */
    Answer exchange(String method, String path, String host, String... headers) throws IOException {
      StringBuilder sb = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: ").append(host).append("\r\n");
      for (String h : headers) sb.append(h).append("\r\n");
      sb.append("Content-Length: 0\r\n\r\n");
      out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      return read();
    }

    Answer read() throws IOException {
      String head = readHead();
      String[] lines = head.split("\r\n");
      int status = Integer.parseInt(lines[0].split(" ")[1]);
      Map<String, String> h = new TreeMap<>();
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        h.merge(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim(), (a, b) -> a + "|" + b);
      }
      int length = Integer.parseInt(h.getOrDefault("content-length", "0"));
      byte[] body = in.readNBytes(length);
      if (body.length < length) throw new IOException("the answer ended after " + body.length + " of " + length + " bytes");
      return new Answer(status, h, new String(body, StandardCharsets.UTF_8));
    }

    private String readHead() throws IOException {
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      int state = 0;
      while (state < 4) {
        int c = in.read();
        if (c < 0) throw new IOException("the connection ended before an answer (" + b.size() + " bytes of head)");
        b.write(c);
        state = (c == '\r' && (state == 0 || state == 2)) || (c == '\n' && (state == 1 || state == 3)) ? state + 1 : (c == '\r' ? 1 : 0);
      }
      return b.toString(StandardCharsets.ISO_8859_1);
    }

    /** True when the peer ended the connection cleanly (EOF), false if it is still open after the wait; a reset throws. */
    boolean endsCleanly() throws IOException {
      return in.read() < 0;
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  final FakeCoordinator fake;
  final NodeAgent agent;
  final AtomicReference<JsonObject> routes = new AtomicReference<>();
  final AtomicReference<JsonArray> commands = new AtomicReference<>(new JsonArray());
  /** The answers' peers block; null: none (version 0, empty). */
  final AtomicReference<JsonObject> peers = new AtomicReference<>();
  final AtomicReference<JsonArray> ingress = new AtomicReference<>(new JsonArray()
      .add(new JsonObject().put("name", "web").put("hostname", "app.example.com").put("port", 443).put("state", "active")));

  IngressFixture(Path state, IngressEdge.Settings edge) {
    fake = new FakeCoordinator(s -> {
      JsonObject a = FakeCoordinator.answer(1, ingress.get(), commands.get());
      if (routes.get() != null) a.put("ingress_routes", routes.get());
      if (peers.get() != null) a.put("peers", peers.get());
      return FakeCoordinator.Answer.ok(a);
    });
    agent = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of(fake.url())), "enroll.token.for-tests", "edge-1",
        List.of("tag:edge"), state, "127.0.0.1", 0, Backoff.standard()).withIngress(edge));
  }

  static IngressEdge.Settings plain() {
    return new IngressEdge.Settings("127.0.0.1", 0).withOverrides(Map.of(MESH_A, "127.0.0.1", MESH_B, "127.0.0.1"));
  }

  int port() {
    return agent.ingress().plainPort();
  }

  String nodeId() throws InterruptedException {
    return AgentBehaviourTest.nodeId(agent);
  }

  static JsonObject route(String id, String host, String prefix, String address, int port) {
    return new JsonObject().put("id", id).put("hostname", host).put("path_prefix", prefix).put("exposure", "public").put("tls", "none")
        .put("target", new JsonObject().put("node", "nd_01jdfake000000000000000009").put("service", "web").put("address", address)
            .put("port", port).put("proto", "tcp"));
  }

  static String routeId() {
    return Ids.next("ir");
  }

  /** Sets the routes of version {@code v} and waits until the agent serves them. */
  void serve(String v, JsonObject... rs) throws InterruptedException {
    routes.set(new JsonObject().put("version", v).put("routes", new JsonArray(new ArrayList<>(List.of(rs)))));
    Await.until("routes version " + v + " applied", 15_000, () -> v.equals(agent.ingress().table().version()));
  }

  /** The latest heartbeat body's {@code ingress_routes} report, or null. */
  JsonObject lastReport() {
    AgentSession session = agent.verticle().session();
    if (session == null || session.nodeId() == null) return null;
    List<FakeCoordinator.Seen> hb = fake.heartbeats(session.nodeId());
    for (int i = hb.size() - 1; i >= 0; i--) {
      JsonObject b = hb.get(i).body();
      if (b != null && b.getValue("ingress_routes") instanceof JsonObject r) return r;
    }
    return null;
  }

  /** The agent's /metrics, as a scraper reads it. */
  String metrics() throws IOException, InterruptedException {
    java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
        java.net.URI.create("http://127.0.0.1:" + agent.listenPort() + "/metrics")).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) throw new IOException("/metrics answered " + r.statusCode());
    return r.body();
  }

  /** The value of {@code series} (name and labels) in the agent's /metrics; NaN when absent. */
  double metric(String series) throws IOException, InterruptedException {
    for (String line : metrics().split("\n")) {
      if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
    }
    return Double.NaN;
  }

  @Override
  public void close() {
    agent.close();
    fake.close();
  }
}
