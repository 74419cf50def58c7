package io.meshplane.node;

import io.meshplane.access.Caller;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import java.util.Set;

/**
 * What the inventory and the write-behind ask of MeshCA (its front door): the automatic revocation of a
 * node's certificates, in the transaction of the change that makes them wrong. A deletion revokes every
 * unexpired certificate of the node ({@code cessationOfOperation}); a re-key, made durable by the
 * write-behind's flush, revokes the certificates that record a WireGuard key other than the new one
 * ({@code superseded}). Each revocation is a {@code pki} change-log entry (every replica's revocation
 * list and CRL carry it) and an audit event, committed with the change or not at all.
 *
 * <p>Two steps, for the order every writer of the change log keeps (rows first, the clock last):
 * {@link #deleting} and {@link #rekeying} lock the certificate rows before the node's row is written;
 * {@link Pending#revoke} appends the entries (taking the clock) at the transaction's end.
 */
public interface NodeCertificates {
  /** Certificates locked in a transaction, to be revoked at its end. */
  interface Pending {
    /** Nothing locked: nothing to revoke. */
    Pending NONE = (tx, nodes) -> Future.succeededFuture(0);

    /**
     * Revokes, in {@code tx}, the locked certificates of the nodes in {@code nodes} (null: every node
     * locked): marks each row, appends its {@code pki} entry and audits it. Completes with the number
     * revoked. Call it last in the transaction, just before the change's own change-log entry.
     */
    Future<Integer> revoke(SqlClient tx, Set<String> nodes);
  }

  /** Revokes nothing: a replica or a test without MeshCA. */
  NodeCertificates NONE = new NodeCertificates() {
    @Override
    public Future<Pending> deleting(SqlClient tx, Caller caller, RequestInfo request, String nodeId) {
      return Future.succeededFuture(Pending.NONE);
    }

    @Override
    public Future<Pending> rekeying(SqlClient tx, String[] nodeIds, String[] keys) {
      return Future.succeededFuture(Pending.NONE);
    }
  };

  /**
   * Locks, in {@code tx}, node {@code nodeId}'s unexpired, unrevoked certificates, before the node's row
   * is deleted; {@link Pending#revoke} (after the {@code DELETE}) revokes them and any a CSR in flight
   * inserted meanwhile ({@code cessationOfOperation}), audited as done by {@code caller} (who deletes the node).
   */
  Future<Pending> deleting(SqlClient tx, Caller caller, RequestInfo request, String nodeId);

  /**
   * Locks, in {@code tx}, the unexpired, unrevoked certificates of {@code nodeIds[i]} that record a
   * WireGuard key other than {@code keys[i]} (the key a flush is about to write; null: none, the node
   * is skipped), before the flush writes the rows; {@link Pending#revoke} revokes those of the nodes
   * whose current key the flush did change ({@code superseded}), audited as done by the system.
   */
  Future<Pending> rekeying(SqlClient tx, String[] nodeIds, String[] keys);
}
