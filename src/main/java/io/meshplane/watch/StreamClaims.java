package io.meshplane.watch;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.HazelcastInstanceAware;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.map.IMap;
import io.vertx.core.Context;
import io.vertx.core.Future;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The cluster-wide limit of streams per node: one entry per node with open streams in a cluster map
 * ({@value #MAP}), listing its claims as {@code <member uuid>/<stream id>}, changed only by entry
 * processors on the entry's owner (so two replicas opening a node's third stream at once cannot both
 * win). A claim of a member that is no longer in the cluster (a killed replica) is dropped by the next
 * claim for that node, so a dead replica's streams never hold a node's places. One map operation per
 * stream opened and one per stream closed; none per message.
 */
final class StreamClaims {
  static final String MAP = "meshplane.watch.claims";

  private final IMap<String, String> map;
  private final String member;

  StreamClaims(HazelcastInstance hz) {
    this.map = hz.getMap(MAP);
    this.member = hz.getCluster().getLocalMember().getUuid().toString();
  }

  /** The claim's id for this replica's stream {@code streamId}. */
  String id(long streamId) {
    return member + "/" + streamId;
  }

  /** Claims a place for node {@code nodeId}: true when it had fewer than {@code max} live claims. */
  Future<Boolean> claim(Context context, String nodeId, String claim, int max) {
    return Future.fromCompletionStage(map.submitToKey(nodeId, new Claim(claim, max)), context);
  }

  /** Gives the place back (the stream ended); fire and forget: a claim left behind by a dead replica is dropped later anyway. */
  void release(String nodeId, String claim) {
    try {
      map.submitToKey(nodeId, new Release(claim));
    } catch (RuntimeException e) {
      // the member is shutting down: the claim goes with it (the others drop a departed member's claims)
    }
  }

  static List<String> parse(String value) {
    List<String> out = new ArrayList<>();
    if (value == null || value.isEmpty()) return out;
    for (String c : value.split(",")) if (!c.isEmpty()) out.add(c);
    return out;
  }

  static final class Claim implements EntryProcessor<String, String, Boolean>, HazelcastInstanceAware, Serializable {
    private static final long serialVersionUID = 1L;
    private final String claim;
    private final int max;
    private transient HazelcastInstance hz;

    Claim(String claim, int max) {
      this.claim = claim;
      this.max = max;
    }

    @Override
    public void setHazelcastInstance(HazelcastInstance hz) {
      this.hz = hz;
    }

    @Override
    public Boolean process(Map.Entry<String, String> e) {
      List<String> claims = parse(e.getValue());
      if (hz != null) {
        Set<String> live = new HashSet<>();
        hz.getCluster().getMembers().forEach(m -> live.add(m.getUuid().toString()));
        claims.removeIf(c -> !live.contains(c.substring(0, c.indexOf('/'))));
      }
      boolean won = claims.size() < max && !claims.contains(claim);
      if (won) claims.add(claim);
      e.setValue(claims.isEmpty() ? null : String.join(",", claims));
      return won;
    }
  }

  static final class Release implements EntryProcessor<String, String, Boolean>, Serializable {
    private static final long serialVersionUID = 1L;
    private final String claim;

    Release(String claim) {
      this.claim = claim;
    }

    @Override
    public Boolean process(Map.Entry<String, String> e) {
      List<String> claims = parse(e.getValue());
      boolean removed = claims.remove(claim);
      if (removed) e.setValue(claims.isEmpty() ? null : String.join(",", claims));
      return removed;
    }
  }
}
