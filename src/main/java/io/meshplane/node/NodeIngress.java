package io.meshplane.node;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

/**
 * What the heartbeat and the node record ask of the ingress routes feature (API.md §19): a node's
 * {@code ingress_routes} block of a heartbeat answer and its {@code ingress_sync}. Answered from this
 * replica's memory (the routes follow the change log): no call blocks or waits on PostgreSQL, and an
 * answer to a node that reports the current version is O(1).
 */
public interface NodeIngress {
  /** No ingress routes feature: nothing is appended, every node's sync is {@code none}. */
  NodeIngress NONE = new NodeIngress() {
    @Override
    public void answer(String nodeId, String reported, Buffer out) {}

    @Override
    public JsonObject sync(String nodeId, String acknowledged) {
      return new JsonObject().put("state", "none").put("acknowledged", acknowledged == null || acknowledged.isEmpty() ? null : acknowledged)
          .putNull("current");
    }
  };

  /**
   * Appends {@code ,"ingress_routes":{…}} to a heartbeat answer, or nothing for a node that serves no
   * route and reported none. {@code reported}: the version the agent reported applying ("" for none).
   */
  void answer(String nodeId, String reported, Buffer out);

  /** {@code ingress_sync}: {@code state} (none, current or behind), the version acknowledged ("" for none) and the current one. */
  JsonObject sync(String nodeId, String acknowledged);

  /**
   * {@code waf_sync} (API.md §20): the traffic policy version the node acknowledged enforcing against
   * the current one ({@code state} none, current or behind), with what it reported (the enforced and
   * shadow versions, a compile error, the probe). {@code report}: the heartbeat's {@code waf} report
   * as compact JSON ("" for none).
   */
  default JsonObject wafSync(String nodeId, String report) {
    return new JsonObject().put("state", "none").putNull("acknowledged").putNull("current");
  }

  /**
   * For the watch stream: whether {@link #answer} for a stream that last carried {@code held} ("" for
   * none) would send the routes in full (the node serves routes, or held some, and its version moved
   * past {@code held}). O(1): asked of every stream in a dispatch pass.
   */
  default boolean due(String nodeId, String held) {
    return false;
  }

  /**
   * For the watch stream: appends what {@link #answer} would for {@code held}, and returns the version
   * the stream carries after it ({@code held} when nothing new was sent).
   */
  default String streamPart(String nodeId, String held, Buffer out) {
    return held;
  }
}
