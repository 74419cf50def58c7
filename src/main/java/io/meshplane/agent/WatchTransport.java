package io.meshplane.agent;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.util.ArrayList;
import java.util.List;

/**
 * The HTTP clients that carry watch streams, apart from the heartbeats' client (a stream holds its
 * connection, or its HTTP/2 stream, for hours; a heartbeat must never wait behind one).
 *
 * <p>HTTP/1.1: one connection per stream. HTTP/2 (cleartext with prior knowledge, {@code
 * setHttp2ClearTextUpgrade(false)}; ALPN over TLS): up to {@code streamsPerConnection} streams multiplexed
 * on each connection ({@code setHttp2MultiplexingLimit}; the server's {@code SETTINGS_MAX_CONCURRENT_STREAMS}
 * still applies, the smaller wins), and as many connections per coordinator as the streams need ({@code
 * PoolOptions.setHttp2MaxSize}). With source addresses, one client per address ({@code setLocalAddress}):
 * a loopback address has about 28,000 ephemeral ports, so a simulator holding more connections than that
 * spreads them over several (127.0.0.2, 127.0.0.3, ...). Node {@code n} uses client {@code n mod clients}.
 */
final class WatchTransport {
  static final CharSequence NDJSON = HttpHeaders.createOptimized("application/x-ndjson");

  /**
   * @param http2 multiplex streams over HTTP/2 connections; false: HTTP/1.1, a connection per stream
   * @param streamsPerConnection HTTP/2 streams at most per connection (ignored for HTTP/1.1)
   * @param sourceAddresses local addresses to connect from, one client each; empty: the system's choice
   * @param expectedStreams streams this process will hold at most (sizes the pools)
   */
  record Settings(boolean http2, int streamsPerConnection, List<String> sourceAddresses, int expectedStreams) {
    Settings {
      sourceAddresses = List.copyOf(sourceAddresses);
      if (streamsPerConnection < 1) throw new IllegalArgumentException("streamsPerConnection must be at least 1");
    }
  }

  private final List<Coordinators.Target> targets;
  private final List<HttpClient> clients = new ArrayList<>();
  private final Settings settings;

  WatchTransport(Vertx vertx, List<Coordinators.Target> targets, Settings settings) {
    this.targets = List.copyOf(targets);
    this.settings = settings;
    int count = Math.max(1, settings.sourceAddresses().size());
    // every stream of a client could end up on one coordinator (failover, owner hints): size each pool for that
    int streamsPerClient = Math.max(1, (settings.expectedStreams() + count - 1) / count);
    for (int i = 0; i < count; i++) {
      HttpClientOptions o = new HttpClientOptions()
          .setKeepAlive(true)
          .setConnectTimeout((int) Coordinators.CONNECT_TIMEOUT_MS)
          // no idle timeout on the connection: the stream's own liveness check (45 s without a line) ends a silent one
          .setIdleTimeout(0)
          .setName("meshplane-watch");
      PoolOptions pool = new PoolOptions().setMaxWaitQueueSize(-1);
      if (settings.http2()) {
        o.setProtocolVersion(HttpVersion.HTTP_2).setHttp2ClearTextUpgrade(false).setUseAlpn(true)
            .setHttp2MultiplexingLimit(settings.streamsPerConnection())
            .setHttp2ConnectionWindowSize(1024 * 1024);
        pool.setHttp2MaxSize(Math.max(1, (streamsPerClient + settings.streamsPerConnection() - 1) / settings.streamsPerConnection()) + 1);
      } else {
        pool.setHttp1MaxSize(streamsPerClient + 1);
      }
      if (!settings.sourceAddresses().isEmpty()) o.setLocalAddress(settings.sourceAddresses().get(i));
      clients.add(vertx.createHttpClient(o, pool));
    }
  }

  Settings settings() {
    return settings;
  }

  /**
   * Sends {@code GET {url}/v1{pathAndQuery}} for node {@code node} on coordinator {@code index}; the
   * request is the handle that ends the stream ({@link HttpClientRequest#reset()}).
   */
  Future<HttpClientRequest> open(int node, int index, String pathAndQuery, String authorization) {
    Coordinators.Target t = targets.get(index);
    RequestOptions o = new RequestOptions().setMethod(HttpMethod.GET).setHost(t.host()).setPort(t.port()).setSsl(t.ssl())
        .setURI(t.basePath() + "/v1" + pathAndQuery)
        .putHeader(HttpHeaders.AUTHORIZATION, authorization)
        .putHeader(HttpHeaders.ACCEPT, NDJSON)
        .putHeader(HttpHeaders.USER_AGENT, Coordinators.USER_AGENT);
    return clients.get(Math.floorMod(node, clients.size())).request(o);
  }

  Future<Void> close() {
    List<Future<Void>> all = new ArrayList<>();
    for (HttpClient c : clients) all.add(c.close());
    return Future.join(all).mapEmpty();
  }
}
