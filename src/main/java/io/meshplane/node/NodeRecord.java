package io.meshplane.node;

import java.time.Instant;

/** A node as stored in PostgreSQL: the record, plus the live fields as of the last write-behind flush. */
record NodeRecord(
    String id,
    String name,
    String team,
    String environment,
    String address,
    String publicKey,
    String[] tags,
    String relay,
    String[] services,
    io.vertx.core.json.JsonArray ingress,
    String[] endpoints,
    String[] routes,
    String reportedRelay,
    String telemetry,
    Instant heartbeatAt,
    Instant createdAt,
    Instant updatedAt,
    Acknowledged acknowledged) {

  /**
   * What the node's heartbeat last acknowledged, as flushed to PostgreSQL (V9): the versions ({@code -1}:
   * none sent) and when its heartbeat first acknowledged them (null: not yet flushed).
   */
  public record Acknowledged(long peers, long acl, Instant at) {
    public static final Acknowledged NONE = new Acknowledged(-1, -1, null);
  }
}
