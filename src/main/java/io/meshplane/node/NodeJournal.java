package io.meshplane.node;

import io.vertx.core.Future;

/**
 * The node state events ({@code node_events}, read at {@code GET /v1/events}), which the heartbeat
 * feature keeps (it finds most of them: stale, online, never confirmed). Another feature records its
 * own kind through this door rather than writing the table: the policy feature's policy drift.
 */
@FunctionalInterface
public interface NodeJournal {
  /** Records a {@code node.policy_drift} event of the node, once per {@code eventId}; dropped when the node is gone. */
  Future<Void> drift(String eventId, String nodeId);
}
