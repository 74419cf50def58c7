package io.meshplane.heartbeat;

import io.meshplane.access.Caller;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.node.NodeIngress;
import io.meshplane.node.NodeKeys;
import io.meshplane.node.NodePki;
import io.meshplane.node.NodePolicy;
import io.meshplane.node.NodeWork;
import io.meshplane.node.OwnerHint;
import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.util.function.Supplier;

/**
 * A heartbeat, on values (no HTTP), the hot path: the node's own credential only, one key per node,
 * the live state into the cluster map through this event loop's {@link HeartbeatBatcher} (no
 * PostgreSQL, no blocking call), then the answer: relay, peers and acl from the policy feature
 * ({@link NodePolicy}), services, ingress and commands from the operations feature ({@link NodeWork}),
 * which also takes the agent's command results. One per coordinator instance (its batcher is its event
 * loop's).
 */
final class HeartbeatService {
  /** A refusal the guard records under the caller ({@code node.heartbeat}, once per window per agent). */
  static final class Denied extends RuntimeException {
    final Refusal refusal;
    final String targetId;

    Denied(Refusal refusal, String targetId) {
      super(null, null, false, false);
      this.refusal = refusal;
      this.targetId = targetId;
    }
  }

  private final HeartbeatBatcher batcher;
  private final MeshMetrics metrics;
  private final NodePolicy policy;
  private final NodeWork work;
  private final NodePki pki;
  private final String interval;
  private final OwnerHint owner;
  private final NodeIngress ingress;

  HeartbeatService(HeartbeatBatcher batcher, MeshMetrics metrics, long intervalSeconds, OwnerHint owner, NodePolicy policy, NodeWork work,
      NodePki pki, NodeIngress ingress) {
    this.ingress = ingress;
    this.batcher = batcher;
    this.pki = pki;
    this.owner = owner;
    this.metrics = metrics;
    this.policy = policy;
    this.work = work;
    this.interval = ",\"interval_s\":" + intervalSeconds + ",";
  }

  /** The credential's node must be the path's; a {@link Denied} otherwise (checked before the body is read). */
  static void own(Caller caller, String id) {
    if (!id.equals(caller.nodeId())) {
      throw new Denied(Refusal.forbidden("this credential belongs to another node"), Ids.looksLike("nd", id) ? id : null);
    }
  }

  /**
   * Stores node {@code id}'s heartbeat and answers it: the answer's JSON, once the live state is stored
   * with its backup. Fails with a {@link Denied} (another node's key), or 503 with Retry-After when the
   * cluster map did not take the write.
   */
  Future<Buffer> accept(Caller caller, String id, HeartbeatRequest hb, Supplier<RequestInfo> request) {
    if (hb.publicKey() != null) {
      // one key per node: a key that is another node's is refused, nothing of this heartbeat is stored
      String holder = policy.keyHolder(hb.publicKey());
      if (holder != null && !holder.equals(id)) {
        if (!hb.commandResults().isEmpty()) work.keyRefused(id, caller, request.get(), hb.commandResults());
        return Future.failedFuture(new Denied(NodeKeys.inUse(), id));
      }
    }
    NodePki.Report report = hb.pki();
    if (report != null && report.csr() != null) {
      // the one heartbeat that does more than a map write: the CSR is checked and signed on MeshCA's pool first, so that
      // a CSR that cannot be signed refuses the heartbeat (400 naming pki.csr) before anything of it is stored
      // an operator's reissue operation open for the node: its CSR is not held back by the one-a-minute rule
      return pki.issue(caller, request.get(), id, hb.publicKey(), report, work.awaits(id, NodeWork.REISSUE)).compose(issued -> store(caller, id, hb, request, issued));
    }
    return store(caller, id, hb, request, null);
  }

  private Future<Buffer> store(Caller caller, String id, HeartbeatRequest hb, Supplier<RequestInfo> request, Buffer issued) {
    long now = System.currentTimeMillis();
    NodePki.Report pr = hb.pki();
    LiveNode live = new LiveNode(now, true, orEmpty(hb.endpoints()), hb.publicKey() == null ? "" : hb.publicKey(),
        hb.relay() == null ? "" : hb.relay(), orEmpty(hb.routes()), hb.telemetry(), hb.knownPeers(), hb.knownAcl(),
        orEmpty(hb.services()), pkiBundle(pr), pkiIssuer(pr), pr == null || pr.serial() == null ? "" : pr.serial(),
        hb.ingressVersion(), hb.ingressStats(), hb.wafReport(), hb.wafSamples());
    return batcher.submit(id, live)
        // the map write failed (its partition's owner just died, say): not acknowledged, so the agent's
        // next beat carries the same state; a second is enough for the cluster to take over
        .recover(t -> Future.failedFuture(Refusal.unavailable("unavailable", "the live state could not be stored; retry", 1)))
        .map(v -> {
          metrics.heartbeats.increment();
          // results are checked against this heartbeat (now stored); completions are written in the background
          if (!hb.commandResults().isEmpty()) {
            work.reported(id, caller, request.get(), new NodeWork.Report(hb.publicKey(), hb.relay(), hb.ingress(), hb.commandResults(),
                hb.pki() == null ? null : hb.pki().serial()));
          }
          // the policy feature writes relay, peers and acl: O(1) when the agent's versions are current
          Buffer out = Buffer.buffer(256).appendString("{\"server_time\":\"").appendString(Times.formatMillis(now))
              .appendString("\"").appendString(interval);
          // owner affinity: "coordinator":"<url>", (its trailing comma keeps the next field valid) or nothing
          owner.append(id, out);
          policy.answer(id, hb.knownPeers(), hb.knownAcl(), out);
          pki.answer(id, hb.pki(), issued, out);
          // the ingress routes this node serves: O(1) when it reported the current version, nothing when it serves none
          ingress.answer(id, hb.ingressVersion(), out);
          work.answer(id, out);
          return out;
        });
  }

  /**
   * What the live entry keeps of the {@code pki} block for a CA rotation's count: the versions the node
   * reported holding. A node whose heartbeat carries a CSR is counted as behind until its next
   * heartbeat says what it adopted ({@link #PENDING}): a rotation does not advance past a node that
   * is getting a certificate right now.
   */
  static String pkiBundle(NodePki.Report r) {
    if (r == null) return "";
    if (r.csr() != null && r.bundle() == null) return PENDING;
    return r.bundle() == null ? "" : r.bundle();
  }

  static String pkiIssuer(NodePki.Report r) {
    if (r == null) return "";
    if (r.csr() != null) return PENDING;
    return r.issuer() == null ? "" : r.issuer();
  }

  /** Not a version or an id: a node in the middle of an issuance. */
  static final String PENDING = "-";

  private static String[] orEmpty(String[] a) {
    return a == null ? new String[0] : a;
  }
}
