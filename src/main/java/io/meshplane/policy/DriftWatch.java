package io.meshplane.policy;

import com.hazelcast.core.EntryEvent;
import com.hazelcast.map.IMap;
import com.hazelcast.map.listener.EntryAddedListener;
import com.hazelcast.map.listener.EntryEvictedListener;
import com.hazelcast.map.listener.EntryExpiredListener;
import com.hazelcast.map.listener.EntryRemovedListener;
import io.meshplane.common.Ids;
import io.vertx.core.Vertx;
import java.util.Map;
import java.util.Set;
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
 * tracked (in this replica's memory), and the cluster map is touched only on the transitions. The
 * claim is lifted by whichever replica answers the node's first current acknowledgment: every replica
 * keeps the ids of the claimed nodes (an entry listener on the claims, keys only), so the drift ends
 * even when that heartbeat lands on another replica than the one that saw it begin, or after that
 * replica restarted and forgot what it tracked.
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
  private final io.meshplane.node.NodeJournal journal;
  private final Map<String, State> tracked = new ConcurrentHashMap<>();
  /** Ids of the nodes claimed as drifting cluster-wide (every replica's copy, from the claims' events). */
  private final Set<String> claimed = ConcurrentHashMap.newKeySet();

  DriftWatch(Vertx vertx, IMap<String, Long> claims, io.meshplane.node.NodeJournal journal) {
    this.vertx = vertx;
    this.claims = claims;
    this.journal = journal;
  }

  /** Follows the claims (keys only) and loads the current ones; a blocking call: at start, off the event loop. */
  void follow() {
    claims.addEntryListener(new ClaimListener(), false);
    claimed.addAll(claims.keySet());
  }

  private final class ClaimListener implements EntryAddedListener<String, Long>, EntryRemovedListener<String, Long>,
      EntryEvictedListener<String, Long>, EntryExpiredListener<String, Long> {
    @Override
    public void entryAdded(EntryEvent<String, Long> e) {
      claimed.add(e.getKey());
    }

    @Override
    public void entryRemoved(EntryEvent<String, Long> e) {
      // the drift ended (on whichever replica): a later one starts from scratch here too
      claimed.remove(e.getKey());
      tracked.remove(e.getKey());
    }

    @Override
    public void entryEvicted(EntryEvent<String, Long> e) {
      claimed.remove(e.getKey());
    }

    @Override
    public void entryExpired(EntryEvent<String, Long> e) {
      claimed.remove(e.getKey());
    }
  }

  /** After a heartbeat answer: {@code known} is the agent's acl version (-1: not sent), {@code current} the node's (-1: unknown). */
  void observe(String nodeId, long known, long current) {
    if (current < 0 || known < 0) return;
    if (known >= current) {
      if (!tracked.isEmpty()) tracked.remove(nodeId);
      // current again: the drift ends, whichever replica claimed it
      if (!claimed.isEmpty() && claimed.remove(nodeId)) claims.removeAsync(nodeId);
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
      journal.drift(Ids.next("ev"), nodeId)
          .onFailure(t -> LOG.warn("[node: {}] policy drift event not recorded: {}", nodeId, t.getMessage()));
    });
  }

  /** Up to {@code max} ids of the nodes claimed as drifting (this replica's copy). */
  java.util.List<String> claimed(int max) {
    return claimed.stream().limit(max).toList();
  }

  /** Forgets a deleted node. */
  void forget(String nodeId) {
    tracked.remove(nodeId);
    if (claimed.remove(nodeId)) claims.removeAsync(nodeId);
  }
}
