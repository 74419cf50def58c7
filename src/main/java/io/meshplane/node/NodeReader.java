package io.meshplane.node;

import io.meshplane.access.Caller;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/** One node record as the inventory answers it (API.md §8), for features that answer with the node after a change. */
public interface NodeReader {
  /** The node inside the caller's boundary, live fields included; fails with a 404 refusal when absent. */
  Future<JsonObject> get(Caller caller, String id);
}
