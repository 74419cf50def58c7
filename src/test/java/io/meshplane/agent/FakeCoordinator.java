package io.meshplane.agent;

import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A tiny coordinator stand-in on a free loopback port (vertx-core HttpServer) for what a real replica
 * cannot be made to do on demand: answer 503 forever, or re-send commands as if it had lost their
 * results. Enrollment is answered like the real one; heartbeats by the test's script. Records every
 * request with its arrival time.
 */
final class FakeCoordinator implements AutoCloseable {
  /** One request as it arrived. */
  record Seen(long nanos, String path, String authorization, JsonObject body) {}

  /** What to answer. */
  record Answer(int status, JsonObject body, Map<String, String> headers) {
    static Answer ok(JsonObject body) {
      return new Answer(200, body, Map.of());
    }

    static Answer problem(int status, String code) {
      return new Answer(status, new JsonObject().put("type", "about:blank").put("title", code).put("status", status).put("code", code)
          .put("detail", "answered by the test"), Map.of());
    }
  }

  private final Vertx vertx = Vertx.vertx();
  private final HttpServer server;
  private final List<Seen> seen = new ArrayList<>();
  private final AtomicInteger enrolled = new AtomicInteger();

  FakeCoordinator(Function<Seen, Answer> heartbeats) {
    try {
      server = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
        JsonObject body = b.length() == 0 ? null : new JsonObject(b);
        Seen s = new Seen(System.nanoTime(), req.path(), req.getHeader("Authorization"), body);
        synchronized (seen) {
          seen.add(s);
        }
        Answer a;
        if (req.path().equals("/v1/nodes")) {
          int n = enrolled.incrementAndGet();
          String id = String.format("nd_01jdfake%018d", n);
          a = new Answer(201, new JsonObject()
              .put("node", new JsonObject().put("id", id).put("name", body.getString("name")).put("address", "100.64.0." + (n + 1) + "/32")
                  .put("public_key", body.getString("public_key")).put("tags", body.getJsonArray("tags")))
              .put("credential", new JsonObject().put("token", "fake." + id + ".credential").put("expires", "2099-01-01T00:00:00.000Z")), Map.of());
        } else {
          a = heartbeats.apply(s);
        }
        a.headers().forEach((k, v) -> req.response().putHeader(k, v));
        req.response().setStatusCode(a.status())
            .putHeader("Content-Type", a.status() >= 400 ? "application/problem+json" : "application/json")
            .end(a.body() == null ? "" : a.body().encode());
      })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  int port() {
    return server.actualPort();
  }

  String url() {
    return "http://127.0.0.1:" + port();
  }

  List<Seen> heartbeats(String nodeId) {
    synchronized (seen) {
      return seen.stream().filter(s -> s.path().equals("/v1/nodes/" + nodeId + "/heartbeat")).toList();
    }
  }

  List<Seen> all() {
    synchronized (seen) {
      return List.copyOf(seen);
    }
  }

  /** A heartbeat answer as the coordinator writes it, with these commands and ingress. */
  static JsonObject answer(int intervalS, io.vertx.core.json.JsonArray ingress, io.vertx.core.json.JsonArray commands) {
    return new JsonObject().put("server_time", "2026-11-21T23:19:28.123Z").put("interval_s", intervalS).put("relay", "fra1")
        .put("peers", new JsonObject().put("version", 0).put("items", new io.vertx.core.json.JsonArray()))
        .put("acl", new JsonObject().put("version", 0).put("rules", new io.vertx.core.json.JsonArray()))
        .put("ingress", ingress).put("services", new io.vertx.core.json.JsonArray()).put("commands", commands);
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
