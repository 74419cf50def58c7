package io.meshplane.node;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What the heartbeat and the inventory ask of the policy feature (its front door): a node's part of a
 * heartbeat answer, its {@code acl_matches} and {@code policy_sync}, and read-your-writes after a
 * change. Answers come from this replica's in-memory model; none of these calls blocks or waits on
 * PostgreSQL.
 */
public interface NodePolicy {
  /**
   * Appends the node's {@code "relay":…,"peers":{…},"acl":{…}} to a heartbeat answer. {@code known*}
   * are the versions the agent holds (-1: none sent). O(1) when they are current.
   */
  void answer(String nodeId, long knownPeers, long knownAcl, Buffer out);

  /**
   * The node's current versions {peers, acl} in this replica's model; null when the model does not
   * hold it. O(1): the watch stream asks it of every stream after every change.
   */
  long[] versions(String nodeId);

  /**
   * The node's {@code "relay":…,"peers":{…},"acl":{…}} for a watch stream, as parts: the same content as
   * {@link #answer}, but parts that nodes sharing the same grants and versions receive are encoded once
   * per {@code shared} map (one dispatch pass) and added as the same bytes. Returns the versions the
   * parts carry {peers, acl}, or null when the model does not hold the node.
   */
  long[] streamParts(String nodeId, long knownPeers, long knownAcl, java.util.Map<Object, Object> shared, List<Buffer> parts);

  /** The grants that apply to the node, as text ({@code grant 2: tag:web -> tag:db tcp/5432 (source)}). */
  List<String> aclMatches(String nodeId);

  /** {@code policy_sync}: the versions the node last acknowledged (-1: never) against the current ones. */
  JsonObject sync(String nodeId, long ackPeers, long ackAcl);

  /**
   * The node whose current public key {@code publicKey} is, as this replica's model knows it (the
   * change log's enrollments, deletions and reported keys); null when none. O(1): the heartbeat asks
   * it of every key it carries.
   */
  String keyHolder(String publicKey);

  /**
   * Ids of the nodes claimed as drifting cluster-wide (this replica's copy of the claims' keys, kept
   * by an entry listener), at most {@code max}: the inventory's {@code policy_sync=drifting}. In
   * memory: no cluster call.
   */
  List<String> drifting(int max);
}
