package io.meshplane.auth;

import io.meshplane.access.Boundary;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import java.time.Instant;
import java.util.function.Supplier;

/**
 * What the node feature needs of tokens, and nothing more: an {@code agent} credential for a node
 * being enrolled, and the revocation of a node's credentials when it is deleted, each in the caller's
 * transaction. The token table, the issuer and the denylist stay behind this door (implemented in
 * this package; {@link AuthModule#agentCredentials()} hands it out).
 */
public interface AgentCredentials {
  /** A node's credential: the JWT (shown once, never stored) and when it expires. */
  record Credential(String jwt, Instant expires) {}

  /**
   * Issues the {@code agent} token of a node (API.md §8): scope the node's team and environment, the
   * single permission {@code heartbeat}, {@code sub} the node id, lifetime {@code tokens.max_lifetime}.
   *
   * @param issuedBy the id of whoever enrolls the node (recorded as {@code created_by})
   */
  Future<Credential> issue(SqlClient tx, String nodeId, String nodeName, Boundary boundary, String issuedBy);

  /**
   * Revokes every agent token of a node in the transaction. The returned step puts the revocations on
   * the cluster-wide denylist: run it once the transaction has committed.
   */
  Future<Supplier<Future<Void>>> revokeAll(SqlClient tx, String nodeId, Instant at);
}
