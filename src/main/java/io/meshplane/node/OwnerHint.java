package io.meshplane.node;

import io.vertx.core.buffer.Buffer;

/**
 * Owner affinity (ARCHITECTURE.md, "Owner affinity"): which replica owns a node's live entry in the
 * cluster map, as that replica advertises itself to agents. Heartbeat answers and watch-stream answers
 * carry it so that an agent can send its heartbeats and its stream where the map write is local. O(1)
 * and in memory: asked by every answer.
 */
public interface OwnerHint {
  /** No hint: a single replica, or no advertised URLs. */
  OwnerHint NONE = (nodeId, out) -> { };

  /** Appends {@code "coordinator":"<base URL>",} (with its trailing comma) for the node, or nothing when there is no hint. */
  void append(String nodeId, Buffer out);
}
