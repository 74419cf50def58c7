package io.meshplane.testing;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import java.util.concurrent.TimeUnit;

/** A real HTTP client for tests: requests go over loopback to a replica's actual port. */
public final class Http implements AutoCloseable {
  private final Vertx vertx = Vertx.vertx();
  private final WebClient client = WebClient.create(vertx, new WebClientOptions().setDefaultHost("127.0.0.1").setKeepAlive(true));

  public HttpRequest<Buffer> request(HttpMethod method, int port, String path) {
    return client.request(method, port, "127.0.0.1", path);
  }

  public HttpResponse<Buffer> send(HttpRequest<Buffer> request) {
    return await(request.send());
  }

  /** Sends the request with these bytes as its body (none when null). */
  public HttpResponse<Buffer> send(HttpRequest<Buffer> request, byte[] body) {
    return await(body == null ? request.send() : request.sendBuffer(Buffer.buffer(body)));
  }

  /** A status line and, unless 200, the body: for routes whose 200 is a stream that does not end (the watch). */
  public record Head(int status, String body) {}

  private io.vertx.core.http.HttpClient streams;

  /**
   * {@code GET path} with the bearer token, reading only the answer's status (and the body of a refusal):
   * a 200 stream is reset as soon as its head arrives.
   */
  public synchronized Head head(int port, String path, String bearer) {
    if (streams == null) streams = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions().setDefaultHost("127.0.0.1"));
    io.vertx.core.http.RequestOptions o = new io.vertx.core.http.RequestOptions().setMethod(HttpMethod.GET).setPort(port).setURI(path);
    if (bearer != null) o.putHeader("Authorization", "Bearer " + bearer);
    return await(streams.request(o).compose(req -> req.send().compose(resp -> {
      if (resp.statusCode() == 200) {
        req.reset();
        return io.vertx.core.Future.succeededFuture(new Head(200, ""));
      }
      return resp.body().map(b -> new Head(resp.statusCode(), b.toString()));
    })));
  }

  public HttpResponse<Buffer> get(int port, String path) {
    return send(request(HttpMethod.GET, port, path));
  }

  public HttpResponse<Buffer> get(int port, String path, String bearer) {
    return send(request(HttpMethod.GET, port, path).bearerTokenAuthentication(bearer));
  }

  public HttpResponse<Buffer> send(HttpMethod method, int port, String path, String bearer, JsonObject body) {
    HttpRequest<Buffer> r = request(method, port, path);
    if (bearer != null) r.bearerTokenAuthentication(bearer);
    return body == null ? await(r.send()) : await(r.sendJsonObject(body));
  }

  public HttpResponse<Buffer> sendRaw(HttpMethod method, int port, String path, String contentType, Buffer body) {
    HttpRequest<Buffer> r = request(method, port, path);
    if (contentType != null) r.putHeader("Content-Type", contentType);
    return await(r.sendBuffer(body));
  }

  public HttpResponse<Buffer> sendRaw(HttpMethod method, int port, String path, String contentType, Buffer body, String bearer) {
    HttpRequest<Buffer> r = request(method, port, path);
    if (contentType != null) r.putHeader("Content-Type", contentType);
    if (bearer != null) r.bearerTokenAuthentication(bearer);
    return await(r.sendBuffer(body));
  }

  /** Sends without waiting, for bursts. */
  public io.vertx.core.Future<HttpResponse<Buffer>> sendAsync(HttpMethod method, int port, String path, String bearer, JsonObject body) {
    HttpRequest<Buffer> r = request(method, port, path);
    if (bearer != null) r.bearerTokenAuthentication(bearer);
    return body == null ? r.send() : r.sendJsonObject(body);
  }

  public static <T> T await(io.vertx.core.Future<T> f, int seconds) {
    try {
      return f.await(seconds, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("no answer within " + seconds + " s", e);
    }
  }

  private static <T> T await(io.vertx.core.Future<T> f) {
    try {
      return f.await(20, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("no HTTP answer within 20 s", e);
    }
  }

  @Override
  public void close() {
    client.close();
    vertx.close();
  }
}
