package io.meshplane.node;

import io.meshplane.access.Caller;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * What the heartbeat asks of MeshCA (its front door): the answer's {@code pki} block (the trust bundle and
 * the revocations when the agent's versions are behind) and, for a heartbeat that carries a CSR, the
 * node's certificate. {@link #answer} reads this replica's memory only; {@link #issue} is the one call
 * that does real work (parse and check the CSR, sign, store the certificate), on MeshCA's bounded
 * signing pool, never on the event loop, under the cluster-wide signing budget.
 */
public interface NodePki {
  /**
   * The agent's {@code pki} block: the certificate it holds ({@code serial}, null for none, and its
   * {@code notAfterMs}, -1 for none), the bundle version it holds (null: none), the revocation version
   * it holds (-1: none), the id of the authority that issued its certificate ({@code issuer}, null: none
   * or not said), and a PKCS#10 CSR (base64 of its DER) when it wants a certificate (null otherwise).
   */
  record Report(String serial, long notAfterMs, String bundle, long revocations, String issuer, String csr) {}

  /** {@code pki_sync} of a node record: what the node reported holding ({@code bundle}, {@code issuer}; "" for none) against the current ones. */
  default io.vertx.core.json.JsonObject sync(String bundle, String issuer, String serial) {
    return null;
  }

  /** Whether a node holding bundle {@code bundle} and revocation list {@code revocations} holds the current ones. O(1). */
  default boolean current(String bundle, long revocations) {
    return true;
  }

  /**
   * The watch stream's {@code ,"pki":{…}} for a node holding bundle {@code bundle} and revocation list
   * {@code revocations}: parts shared by every stream at the same versions (the same bytes), added to
   * {@code parts}. Returns the versions sent {bundle, revocations} (the bundle as its version string), or
   * null when there is nothing new for it.
   */
  default Object[] streamParts(String bundle, long revocations, java.util.List<Buffer> parts) {
    return null;
  }

  /** Answers nothing: a replica or a test without MeshCA. */
  NodePki NONE = new NodePki() {
    @Override
    public Future<Buffer> issue(Caller caller, RequestInfo request, String nodeId, String reportedKey, Report report, boolean requested) {
      return Future.succeededFuture(null);
    }

    @Override
    public void answer(String nodeId, Report report, Buffer issued, Buffer out) {}
  };

  /**
   * Issues node {@code nodeId}'s certificate for the report's CSR, bound to the node's identity (team,
   * environment, mesh address) and to its WireGuard key ({@code reportedKey} when this heartbeat
   * reports one, the stored one otherwise); every name in the CSR is ignored. The value is the members
   * {@link #answer} adds ({@code "certificate":{…}}, or {@code "deferred":{…}} when the cluster's signing
   * budget is spent). Fails with a {@code Refusal} naming {@code pki.csr} when the CSR cannot be signed
   * (unreadable, a bad signature, a key type MeshCA does not issue for), before anything of the
   * heartbeat is stored. Audited under {@code caller} (the node's credential). {@code requested}: an
   * operator asked for it (a reissue operation is open), so the one-a-minute rule does not hold it back.
   */
  Future<Buffer> issue(Caller caller, RequestInfo request, String nodeId, String reportedKey, Report report, boolean requested);

  /**
   * Appends {@code ,"pki":{…}} to a heartbeat answer when there is anything to say: the bundle and the
   * revocations when the report's versions are behind ({@code "unchanged"} otherwise), and
   * {@code issued} (from {@link #issue}, or null). Appends nothing when the agent sent no report. O(1)
   * when the versions are current.
   */
  void answer(String nodeId, Report report, Buffer issued, Buffer out);

  /** The automatic revocations (a node deleted, a node re-keyed): MeshCA's, or none without it. */
  default NodeCertificates certificates() {
    return NodeCertificates.NONE;
  }
}
