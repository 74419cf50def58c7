package io.meshplane.heartbeat;

import io.meshplane.node.LiveNodes;
import io.vertx.core.Future;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * The heartbeat feature's side of {@link LiveNodes}: the inventory's view of the cluster map and of the
 * staleness rule. The rule is set when the feature starts (it needs the cluster's start time); the
 * inventory's routes are served only after that.
 */
final class LiveView implements LiveNodes {
  private final LiveState live;
  private volatile Staleness staleness;

  LiveView(LiveState live) {
    this.live = live;
  }

  void staleness(Staleness s) {
    this.staleness = s;
  }

  @Override
  public Future<Live> get(String nodeId) {
    return live.get(nodeId).map(LiveView::view);
  }

  @Override
  public Future<Map<String, Live>> getAll(Set<String> nodeIds) {
    return live.getAll(nodeIds).map(all -> {
      Map<String, Live> out = new HashMap<>(all.size() * 2);
      all.forEach((id, n) -> out.put(id, view(n)));
      return out;
    });
  }

  @Override
  public Future<Void> forget(String nodeId) {
    return live.remove(nodeId);
  }

  @Override
  public String status(Long heartbeatAtMillis, long nowMillis) {
    return staleness.status(heartbeatAtMillis, nowMillis);
  }

  @Override
  public long staleCutoff(long nowMillis) {
    return staleness.cutoff(nowMillis);
  }

  @Override
  public PkiTally pkiTally(String bundle, String issuer, int max) {
    return live.pkiTally(bundle, issuer, staleness.cutoff(System.currentTimeMillis()), max);
  }

  private static Live view(LiveNode n) {
    return n == null ? null : new Live(n.heartbeatAt(), n.endpoints(), n.relay(), n.publicKey(), n.routes(), n.telemetry(), n.knownPeers(),
        n.knownAcl(), n.services(), n.pkiBundle(), n.pkiIssuer(), n.pkiSerial(), n.ingressVersion(), n.ingressStats(), n.wafReport(), n.wafSamples());
  }
}
