package io.meshplane.policy;

import com.hazelcast.map.IMap;
import io.meshplane.common.Ids;
import io.vertx.core.Vertx;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Policy drift (the seed: a mismatch between acl_matches and what the node does is a policy bug or an
 * incident): a node that was sent its current rules and still acknowledges an older ACL version in
 * {@value #BEHIND_LIMIT} more heartbeats answered by this replica is drifting. Recorded once
 * cluster-wide (a claim on {@link PolicyModule#DRIFT_MAP}, as the staleness monitors claim their
 * transitions) as a {@code node.policy_drift} event, counted in {@code mesh_node_policy_drift} until
 * the node acknowledges the current version.
 *
 * <p>Costs nothing for a node that is current and not drifting: only nodes behind their version are
 * tracked (in this replica's memory), and the cluster map is touched only on the transitions.
 */
final class DriftWatch {
  private static final Logger LOG = LoggerFactory.getLogger(DriftWatch.class);
  static final int BEHIND_LIMIT = 3;
  /** Nodes tracked at most (a bound on memory if a whole fleet falls behind at once). */
  private static final int MAX_TRACKED = 200_000;

  private static final class State {
    long sent;
    int behind;
    boolean drifting;
  }

  private final Vertx vertx;
  private final IMap<String, Long> claims;
  private final PolicyRepository repository;
  private final Map<String, State> tracked = new ConcurrentHashMap<>();

  DriftWatch(Vertx vertx, IMap<String, Long> claims, PolicyRepository repository) {
    this.vertx = vertx;
    this.claims = claims;
    this.repository = repository;
  }

  /** After a heartbeat answer: {@code known} is the agent's acl version (-1: not sent), {@code current} the node's (-1: unknown). */
  void observe(String nodeId, long known, long current) {
    if (current < 0 || known < 0) return;
    if (known >= current) {
      if (tracked.isEmpty()) return;
      State s = tracked.remove(nodeId);
      if (s != null && s.drifting) claims.removeAsync(nodeId);
      return;
    }
    if (tracked.size() >= MAX_TRACKED && !tracked.containsKey(nodeId)) return;
    State s = tracked.computeIfAbsent(nodeId, k -> new State());
    if (s.sent != current) {
      // this answer carries the current rules: the count starts now
      s.sent = current;
      s.behind = 0;
      return;
    }
    if (++s.behind < BEHIND_LIMIT || s.drifting) return;
    s.drifting = true;
    // the claim is a blocking map call (Hazelcast 5.3 has no async putIfAbsent): off the event loop, once per drift
    vertx.executeBlocking(() -> claims.putIfAbsent(nodeId, current) == null, false).onSuccess(won -> {
      if (!won) return;
      LOG.warn("[node: {}] policy drift: acknowledges ACL version {} after {} answers carrying version {}", nodeId, known, BEHIND_LIMIT,
          current);
      repository.driftEvent(Ids.next("ev"), nodeId, current)
          .onFailure(t -> LOG.warn("[node: {}] policy drift event not recorded: {}", nodeId, t.getMessage()));
    });
  }

  /** Forgets a deleted node. */
  void forget(String nodeId) {
    if (tracked.remove(nodeId) != null) claims.removeAsync(nodeId);
  }
}
