package io.meshplane.watch;

import io.meshplane.common.Times;
import io.vertx.core.Context;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;

/**
 * One open watch stream: the response it writes to (on its connection's event loop only), the node
 * and credential it serves, and what it last carried. The versions and the work it last carried are
 * the dispatch thread's alone; the rest is set once at open or is volatile.
 */
final class WatchStream {
  final long id;
  final String nodeId;
  /** The agent token's id: a revocation names it. */
  final String tokenId;
  final long expiresAtMillis;
  final String claim;
  final Context context;
  private final HttpServerRequest request;
  private final HttpServerResponse response;
  private final boolean http2;

  // ---- the dispatch thread's ----
  /** The versions the stream's last answer carried (at open: the agent's, -1 when it sent none). */
  long peers;
  long acl;
  /** The node's work (NodeWork.state) the last answer carried; {@link #NONE_YET} before the first. */
  Object work = NONE_YET;
  boolean started;
  /** Whether the agent holds MeshCA's bundle or revocation list (it said so at open): its answers carry their changes. */
  boolean pki;
  /** The bundle version and revocation version the stream last carried (at open: the agent's; "" and -1 for none). */
  String pkiBundle = "";
  long pkiRevocations = -1;
  /** The ingress routes version the stream last carried (at open: the agent's; "" for none). */
  String ingress = "";

  static final Object NONE_YET = new Object();

  /** What the agent said it holds of MeshCA's at open. */
  record Pki(String bundle, long revocations) {}

  /** When the stream's token stops working for a rotation (Long.MAX_VALUE: not retired). */
  volatile long notAfterMillis = Long.MAX_VALUE;
  volatile long lastWriteMillis;
  /** Bytes written and not yet sent (the event loop's). */
  private long unsent;
  /** Set once, on the event loop, when the stream ends for whatever reason. */
  volatile boolean ended;

  WatchStream(long id, String nodeId, String tokenId, long expiresAtMillis, String claim, Context context, HttpServerRequest request,
      long knownPeers, long knownAcl) {
    this.id = id;
    this.nodeId = nodeId;
    this.tokenId = tokenId;
    this.expiresAtMillis = expiresAtMillis;
    this.claim = claim;
    this.context = context;
    this.request = request;
    this.response = request.response();
    this.http2 = request.version() == HttpVersion.HTTP_2;
    this.peers = knownPeers;
    this.acl = knownAcl;
    this.lastWriteMillis = System.currentTimeMillis();
  }

  /**
   * Writes one line (on the event loop). False when the agent has not taken what was written before:
   * more than {@code maxUnsent} bytes are written and not yet sent (TCP's or HTTP/2's window is full);
   * the caller ends the stream as a slow reader. Counted here rather than read from the response's
   * writability, which HTTP/2 streams do not report per stream.
   */
  boolean write(Buffer line, int maxUnsent) {
    if (ended) return true;
    if (unsent > maxUnsent || response.writeQueueFull()) return false;
    int n = line.length();
    unsent += n;
    response.write(line).onComplete(ar -> unsent -= n);
    lastWriteMillis = System.currentTimeMillis();
    return true;
  }

  /** Ends the stream (on the event loop): a {@code close} line and the response's end, or, for a slow reader, the stream cut. */
  void end(String reason, int retryAfterSeconds) {
    if (ended) return;
    ended = true;
    if ("client_gone".equals(reason)) return;
    if ("slow_reader".equals(reason) || unsent > 0 && response.writeQueueFull()) {
      // nothing more can be written: HTTP/2 resets this stream only, HTTP/1.1 closes the connection
      if (http2) response.reset();
      else request.connection().close();
      return;
    }
    response.end(Buffer.buffer("{\"type\":\"close\",\"reason\":\"" + reason + "\",\"retry_after_s\":" + retryAfterSeconds
        + ",\"server_time\":\"" + Times.formatMillis(System.currentTimeMillis()) + "\"}\n"));
  }
}
