package io.meshplane.node;

import io.meshplane.access.Caller;
import io.meshplane.common.RequestInfo;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What the heartbeat asks of the operations feature (its front door): the node's bound services,
 * assigned ingress and open commands for the answer, and the agent's command results. Both calls
 * read this replica's memory only (a board fed by the change log): neither blocks nor waits on
 * PostgreSQL. A node with nothing assigned and nothing open costs one probe of a map that holds only
 * nodes with work.
 */
public interface NodeWork {
  /** What a heartbeat said that an operation may be verified against, with the agent's command results. */
  record Report(String publicKey, String relay, List<JsonObject> ingress, List<JsonObject> results, String pkiSerial) {}

  /** The operation kind that asks a node for a new MeshCA certificate. */
  String REISSUE = "reissue_certificate";

  /** Whether an operation of {@code kind} is open for the node (this replica's board). O(1). */
  default boolean awaits(String nodeId, String kind) {
    return false;
  }

  /** Appends {@code ,"services":[…],"ingress":[…],"commands":[…]}} (the answer's end) for the node. */
  void answer(String nodeId, Buffer out);

  /**
   * The node's work as this replica's board holds it now: a value that is replaced (a new identity)
   * whenever the node's services, ingress or commands change, null when it has none. O(1): the watch
   * stream compares it after every change.
   */
  Object state(String nodeId);

  /**
   * The agent's command results, checked against the same heartbeat's key, relay and ingress; an
   * operation completes in PostgreSQL in the background (the answer does not wait). Results naming an
   * operation that is not open for this node are ignored and counted.
   */
  void reported(String nodeId, Caller node, RequestInfo request, Report report);

  /**
   * A heartbeat carrying these results was refused: the key it reported is another node's. A re-key
   * among them fails (its new key cannot be the node's); the other results are left for the agent's
   * next heartbeat.
   */
  void keyRefused(String nodeId, Caller node, RequestInfo request, List<JsonObject> results);
}
