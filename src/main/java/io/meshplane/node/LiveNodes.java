package io.meshplane.node;

import io.vertx.core.Future;
import java.util.Map;
import java.util.Set;

/**
 * What the inventory needs of the nodes' live state, which the heartbeat feature owns and provides
 * (this interface is the door; the cluster map, the heartbeat's SQL and the staleness rule stay
 * behind it): the live fields of nodes, their status, and forgetting a deleted node.
 */
public interface LiveNodes {
  /**
   * What a node's last accepted heartbeat said; {@code ingressVersion} and {@code ingressStats} are its
   * {@code ingress_routes} report ("" for none; the stats as compact JSON), {@code wafReport} its {@code waf} part without the samples, {@code wafSamples} those (a JSON list).
   */
  record Live(long heartbeatAt, String[] endpoints, String reportedRelay, String reportedKey, String[] routes, String telemetry,
      long knownPeers, long knownAcl, String[] services, String pkiBundle, String pkiIssuer,
      String pkiSerial, String ingressVersion, String ingressStats, String wafReport, String wafSamples) {}

  /**
   * What a CA rotation counts before it advances: the online nodes that reported a {@code pki} block,
   * how many of them hold another bundle than {@code bundle} or a certificate from another authority
   * than {@code issuer} (null: not compared), the same among stale nodes (counted apart: they do not
   * hold a rotation back), and the first {@code max} online holdouts by id.
   */
  record PkiTally(long online, long behind, long staleBehind, java.util.List<String> holdouts) {}

  /** Counts {@link PkiTally} with queries on the cluster map (run on its members). Blocking: call it off the event loops. */
  default PkiTally pkiTally(String bundle, String issuer, int max) {
    return new PkiTally(0, 0, 0, java.util.List.of());
  }

  /** The node's live fields, or null when the cluster has none (never heard of since it came up). */
  Future<Live> get(String nodeId);

  /** The live fields of these nodes (absent = none); one call for a page of nodes. */
  Future<Map<String, Live>> getAll(Set<String> nodeIds);

  /** Drops a deleted node's live state (its entry and its stale mark). */
  Future<Void> forget(String nodeId);

  /** {@code pending}, {@code online} or {@code stale} for a last heartbeat (null: never), with the cold-start grace. */
  String status(Long heartbeatAtMillis, long nowMillis);

  /** Heartbeats older than this are stale now (the status filter of the inventory). */
  long staleCutoff(long nowMillis);
}
