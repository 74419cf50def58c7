package io.meshplane.agent;

import io.meshplane.common.Ports;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The coordinator replicas a node talks to ({@code --coordinator URL[,URL…]}) and the one HTTP client
 * (vertx-core, keep-alive, bounded pool) every request goes through. A request never fails: whatever
 * happens ends as a classified {@link Reply}. Which URL to use is the caller's (each {@link AgentSession}
 * keeps its own place in the list).
 */
final class Coordinators {
  static final String USER_AGENT = "meshplane-agent/" + AgentSession.AGENT_VERSION;
  static final long CONNECT_TIMEOUT_MS = 5_000;
  private static final CharSequence JSON = HttpHeaders.createOptimized("application/json");
  static final long ANSWER_TIMEOUT_MS = 10_000;

  /** One coordinator URL, parsed. */
  record Target(String url, String host, int port, boolean ssl, String basePath) {}

  private final List<Target> targets;
  private final List<String> keys = new ArrayList<>();
  /** Owner hints seen, and the index each names (-1: none); shared by every node of a simulator. */
  private final Map<String, Integer> hints = new ConcurrentHashMap<>();
  private final HttpClient client;

  /**
   * @param connections HTTP/1.1 connections at most per coordinator
   * @param waiting requests at most waiting for a connection (beyond: {@code pool_busy} at once)
   */
  Coordinators(Vertx vertx, List<Target> targets, int connections, int waiting) {
    this(vertx, targets, connections, waiting, null);
  }

  /** @param localAddress the address to connect from (the simulator's first {@code --source-addresses}), null: the system's choice */
  Coordinators(Vertx vertx, List<Target> targets, int connections, int waiting, String localAddress) {
    this.targets = List.copyOf(targets);
    HttpClientOptions options = new HttpClientOptions()
        .setKeepAlive(true)
        .setConnectTimeout((int) CONNECT_TIMEOUT_MS)
        .setIdleTimeout(60)
        .setName("meshplane-agent");
    if (localAddress != null) options.setLocalAddress(localAddress);
    this.client = vertx.createHttpClient(options, new PoolOptions().setHttp1MaxSize(connections).setMaxWaitQueueSize(waiting));
    for (Target t : this.targets) keys.add(key(t));
  }

  /** A URL's identity for comparisons: scheme, lower-case host, explicit port, path without trailing slashes. */
  private static String key(Target t) {
    return (t.ssl() ? "https://" : "http://") + t.host().toLowerCase(Locale.ROOT) + ":" + t.port() + t.basePath();
  }

  /**
   * The index of the configured URL an owner hint ({@code "coordinator"} in an answer, API.md §11) names,
   * compared normalised ({@code HTTP://Host:80/} is {@code http://host}); -1 when it is none of them or not
   * a URL (a hint outside the list is ignored).
   */
  int indexOf(String hint) {
    if (hint == null || hint.isEmpty() || hint.length() > 2048) return -1;
    Integer cached = hints.get(hint);
    if (cached != null) return cached;
    int found = -1;
    try {
      found = keys.indexOf(key(parse(List.of(hint)).get(0)));
    } catch (IllegalArgumentException notAUrl) {
      // ignored like any hint outside the list
    }
    if (hints.size() >= 256) hints.clear(); // a handful of replicas: the cache never needs more
    hints.put(hint, found);
    return found;
  }

  /**
   * Parses {@code http(s)://host[:port][/base]} URLs.
   *
   * @throws IllegalArgumentException naming the bad URL
   */
  static List<Target> parse(List<String> urls) {
    if (urls == null || urls.isEmpty()) throw new IllegalArgumentException("--coordinator: at least one URL is needed");
    List<Target> out = new ArrayList<>();
    for (String raw : urls) {
      String u = raw.trim();
      URI uri;
      try {
        uri = new URI(u);
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException("--coordinator: '" + u + "' is not a URL");
      }
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      if (!scheme.equals("http") && !scheme.equals("https")) {
        throw new IllegalArgumentException("--coordinator: '" + u + "' must start with http:// or https://");
      }
      if (uri.getHost() == null || uri.getUserInfo() != null || uri.getQuery() != null || uri.getFragment() != null) {
        throw new IllegalArgumentException("--coordinator: '" + u + "' must be http(s)://host[:port][/path], nothing else");
      }
      boolean ssl = scheme.equals("https");
      // a port, when given, as the coordinator reads one (java.net.URI takes 0 and leading zeros)
      String authority = uri.getRawAuthority();
      int colon = authority.lastIndexOf(':');
      if (uri.getPort() != -1 && (colon < 0 || Ports.parse(authority, colon + 1, authority.length()) < 0)) {
        throw new IllegalArgumentException("--coordinator: '" + u + "' has no port 1-65535 (digits without a leading zero)");
      }
      int port = uri.getPort() > 0 ? uri.getPort() : ssl ? 443 : 80;
      String path = uri.getRawPath() == null ? "" : uri.getRawPath();
      while (path.endsWith("/")) path = path.substring(0, path.length() - 1);
      String host = uri.getHost();
      if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
      out.add(new Target(u, host, port, ssl, path));
    }
    return out;
  }

  int size() {
    return targets.size();
  }

  Target target(int index) {
    return targets.get(index);
  }

  List<Target> targets() {
    return targets;
  }

  /** POSTs a JSON body to {@code path} (under {@code /v1}) on coordinator {@code index}. */
  Future<Reply> post(int index, String path, String authorization, Buffer body) {
    return send(HttpMethod.POST, index, path, authorization, body);
  }

  /** Sends a JSON body with {@code method} to {@code path} (under {@code /v1}) on coordinator {@code index}. */
  Future<Reply> send(HttpMethod method, int index, String path, String authorization, Buffer body) {
    Target t = targets.get(index);
    RequestOptions o = new RequestOptions().setMethod(method).setHost(t.host()).setPort(t.port()).setSsl(t.ssl())
        .setURI(t.basePath() + "/v1" + path)
        // no per-request connect timeout: in Vert.x it also bounds the wait for a pooled connection (and cancelling
        // that wait races the pool); TCP connects are bounded by the client's option, waits by the bounded queue
        .setIdleTimeout(ANSWER_TIMEOUT_MS)
        .putHeader(HttpHeaders.AUTHORIZATION, authorization)
        .putHeader(HttpHeaders.CONTENT_TYPE, JSON)
        .putHeader(HttpHeaders.ACCEPT, JSON)
        .putHeader(HttpHeaders.USER_AGENT, USER_AGENT);
    return client.request(o)
        .compose(req -> req.send(body).compose(resp -> resp.body().map(b -> reply(resp, b))))
        .otherwise(Reply::failure);
  }

  /** Classifies an answer: status, JSON body, {@code Retry-After}. */
  static Reply reply(HttpClientResponse resp, Buffer b) {
    int status = resp.statusCode();
    JsonObject json = null;
    boolean readable = true;
    if (b.length() > 0) {
      try {
        json = new JsonObject(b);
      } catch (DecodeException | ClassCastException e) {
        readable = false;
      }
    }
    long retryAfter = 0;
    String ra = resp.getHeader(HttpHeaders.RETRY_AFTER);
    if (ra != null) {
      try {
        retryAfter = Math.min(Long.parseLong(ra.trim()), 3600) * 1000;
      } catch (NumberFormatException notSeconds) {
        // an HTTP date: ignored, the back-off applies
      }
    }
    String error = null;
    if (status < 200 || status >= 300) error = "http_" + status;
    else if (!readable || json == null) error = "invalid_answer";
    return new Reply(status, json, error, null, retryAfter, b.length());
  }

  Future<Void> close() {
    return client.close();
  }
}
