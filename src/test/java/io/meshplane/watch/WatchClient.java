package io.meshplane.watch;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.Http2Settings;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A test's watch stream: opens {@code GET /v1/nodes/{id}/watch} over real HTTP (1.1, or HTTP/2 with
 * prior knowledge) and queues each NDJSON line as it arrives; {@link #ended} completes when the
 * response ends or breaks.
 */
final class WatchClient implements AutoCloseable {
  final int status;
  final HttpClientResponse response;
  final String body;
  final BlockingQueue<JsonObject> lines = new LinkedBlockingQueue<>();
  final CompletableFuture<String> ended = new CompletableFuture<>();
  private final HttpClient client;

  private WatchClient(HttpClient client, HttpClientResponse response, String body) {
    this.client = client;
    this.response = response;
    this.status = response.statusCode();
    this.body = body;
  }

  static WatchClient open(Vertx vertx, int port, String nodeId, String token, String query, boolean http2) {
    return open(vertx, port, nodeId, token, query, http2, 0);
  }

  /** {@code window} > 0: an HTTP/2 stream window this small, and the response paused (an agent that does not read). */
  static WatchClient open(Vertx vertx, int port, String nodeId, String token, String query, boolean http2, int window) {
    HttpClientOptions o = new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port);
    if (http2) {
      o.setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false);
      if (window > 0) o.setInitialSettings(new Http2Settings().setInitialWindowSize(window));
    }
    HttpClient client = vertx.createHttpClient(o);
    String path = "/v1/nodes/" + nodeId + "/watch" + (query == null || query.isEmpty() ? "" : "?" + query);
    CompletableFuture<WatchClient> opened = new CompletableFuture<>();
    client.request(new RequestOptions().setMethod(HttpMethod.GET).setURI(path).putHeader("Authorization", "Bearer " + token))
        .compose(req -> req.send())
        .onSuccess(resp -> {
          if (resp.statusCode() != 200) {
            resp.body().onComplete(b -> opened.complete(new WatchClient(client, resp, b.succeeded() ? b.result().toString() : "")));
            return;
          }
          WatchClient w = new WatchClient(client, resp, null);
          if (window > 0) resp.pause();
          StringBuilder partial = new StringBuilder();
          resp.handler(chunk -> {
            partial.append(chunk.toString());
            int nl;
            while ((nl = partial.indexOf("\n")) >= 0) {
              w.lines.add(new JsonObject(partial.substring(0, nl)));
              partial.delete(0, nl + 1);
            }
          });
          resp.endHandler(v -> w.ended.complete("end"));
          resp.exceptionHandler(t -> w.ended.complete("broken: " + t));
          opened.complete(w);
        })
        .onFailure(opened::completeExceptionally);
    try {
      return opened.get(20, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the stream did not open: " + e, e);
    }
  }

  /** The next line, waiting up to {@code ms}; fails when none came. */
  JsonObject next(long ms) {
    try {
      JsonObject j = lines.poll(ms, TimeUnit.MILLISECONDS);
      if (j == null) throw new AssertionError("no line within " + ms + " ms");
      return j;
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  /** The next {@code answer} line (pings skipped). */
  JsonObject nextAnswer(long ms) {
    long until = System.currentTimeMillis() + ms;
    while (true) {
      JsonObject j = next(Math.max(1, until - System.currentTimeMillis()));
      if ("answer".equals(j.getString("type")) || "close".equals(j.getString("type"))) return j;
    }
  }

  JsonObject problem() {
    return new JsonObject(body);
  }

  @Override
  public void close() {
    client.close();
  }

  static Buffer none() {
    return Buffer.buffer();
  }
}
