package io.meshplane.meshca;

import io.meshplane.access.Caller;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.meshplane.node.NodeCertificates;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * The revocations nobody asks for ({@link NodeCertificates}): a deleted node's certificates
 * ({@code cessationOfOperation}, audited under whoever deleted it) and a re-keyed node's certificates
 * that record its old WireGuard key ({@code superseded}, audited under the system), each revoked in
 * the transaction of the change, exactly as {@code POST …/revoke} revokes one: the row, its {@code pki}
 * change-log entry (seq into {@code revoked_seq}) and a {@code meshca.revoke} audit event whose details
 * say what caused it.
 */
final class AutoRevocations implements NodeCertificates {
  private final CertificateRepository certificates;
  private final AuditLog audit;

  AutoRevocations(CertificateRepository certificates, AuditLog audit) {
    this.certificates = certificates;
    this.audit = audit;
  }

  @Override
  public Future<Pending> deleting(SqlClient tx, Caller caller, RequestInfo request, String nodeId) {
    // locked now (before the node's row), and looked up again at the end, after the DELETE: a certificate
    // a CSR in flight inserted meanwhile (under the node row's key-share lock, which the DELETE waited for) is revoked too
    return certificates.lockUnrevoked(tx, nodeId).map(locked -> (t, nodes) -> certificates.lockUnrevoked(t, nodeId)
        .compose(all -> revoke(t, all, nodes, Actor.of(caller), request, "cessationOfOperation", "node.delete")));
  }

  @Override
  public Future<Pending> rekeying(SqlClient tx, String[] nodeIds, String[] keys) {
    return certificates.lockOtherKeys(tx, nodeIds, keys).map(locked -> locked.isEmpty() ? Pending.NONE
        : (t, nodes) -> revoke(t, locked, nodes, Actor.system("re-key"), new RequestInfo(UUID.randomUUID().toString().replace("-", ""), null),
            "superseded", "node.rekey"));
  }

  /** Revokes {@code locked} (those of {@code nodes}; null: all) one after the other in {@code tx}; completes with how many. */
  private Future<Integer> revoke(SqlClient tx, List<CertificateRepository.Cert> locked, Set<String> nodes, Actor actor, RequestInfo request,
      String reason, String cause) {
    Instant at = Times.now();
    Future<Integer> chain = Future.succeededFuture(0);
    for (CertificateRepository.Cert c : locked) {
      if (nodes != null && !nodes.contains(c.nodeId())) continue;
      chain = chain.compose(n -> {
        Revocations.Revoked r = new Revocations.Revoked(c.serial(), c.spkiSha256(), at, reason, c.notAfter(), 0);
        return ChangeLog.append(tx, Revocations.KIND, r.json().put("op", "revoke").put("node_id", c.nodeId()))
            .compose(seq -> certificates.markRevoked(tx, c.serial(), at, reason, seq)
                .compose(v -> audit.record(tx, AuditEvent.of(actor, request, "meshca.revoke", "certificate", c.serial(), AuditEvent.SUCCESS,
                    c.team(), c.environment()).with(new JsonObject().put("node_id", c.nodeId()).put("reason", reason).put("seq", seq)
                    .put("cause", cause).put("wireguard_key", c.wireguardKey())))))
            .map(v -> n + 1);
      });
    }
    return chain;
  }
}
