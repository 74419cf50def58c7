package io.meshplane.node;

import io.meshplane.access.Caller;
import io.meshplane.common.Page;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What the bulk feature asks of the inventory (its front door): the single-node re-tag and deletion
 * exactly as their routes call them (the same scope rule, audit event, change-log entry and
 * refusals), and which nodes a filter selects.
 */
public interface NodeActions extends NodeReader {
  /** {@code PUT /nodes/{id}/tags}: the node record after the change; a 404 refusal when the node is not in the caller's boundary. */
  Future<JsonObject> retag(Caller caller, RequestInfo request, String id, String[] tags);

  /** {@code DELETE /nodes/{id}}; a 404 refusal when the node is not in the caller's boundary. */
  Future<Void> delete(Caller caller, RequestInfo request, String id);

  /**
   * {@code {id, name}} of the nodes inside the caller's boundary that {@code filter} selects, in id
   * order, at most {@code max} + 1 (so that "more than max" can be told). The work that grows with
   * the data (the drift claims' copy, the records' JSON) runs through {@code offload}, off the event loop.
   */
  Future<List<JsonObject>> matching(Caller caller, NodeFilter filter, int max, Page.Offload offload);
}
