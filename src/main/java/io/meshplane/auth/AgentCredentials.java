package io.meshplane.auth;

import io.meshplane.access.Boundary;
import io.meshplane.access.Surface;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * What the node feature needs of tokens, and nothing more: an {@code agent} credential for a node
 * being enrolled, and the revocation of a node's credentials when it is deleted, each in the caller's
 * transaction. The token table, the issuer and the denylist stay behind this door.
 */
public final class AgentCredentials {
  /** A node's credential: the JWT (shown once, never stored) and when it expires. */
  public record Credential(String jwt, Instant expires) {}

  private final TokenIssuer issuer;
  private final TokenRepository repository;
  private final Denylist denylist;
  private final Duration lifetime;

  public AgentCredentials(TokenIssuer issuer, TokenRepository repository, Denylist denylist, Duration lifetime) {
    this.issuer = issuer;
    this.repository = repository;
    this.denylist = denylist;
    this.lifetime = lifetime;
  }

  /**
   * Issues the {@code agent} token of a node (SPEC §4): scope the node's team and environment, the
   * single permission {@code heartbeat}, {@code sub} the node id, lifetime {@code tokens.max_lifetime}.
   *
   * @param issuedBy the id of whoever enrolls the node (recorded as {@code created_by})
   */
  public Future<Credential> issue(SqlClient tx, String nodeId, String nodeName, Boundary boundary, String issuedBy) {
    Instant now = Times.now();
    return issuer.issue(tx, "agent:" + nodeName, new Scope(boundary.team(), boundary.environment(), Surface.AGENT), nodeId,
            now.plus(lifetime), issuedBy)
        .map(issued -> new Credential(issued.jwt(), issued.record().expiresAt()));
  }

  /**
   * Revokes every agent token of a node in the transaction. The returned step puts the revocations on
   * the cluster-wide denylist: run it once the transaction has committed.
   */
  public Future<Supplier<Future<Void>>> revokeAll(SqlClient tx, String nodeId, Instant at) {
    return repository.revokeForNode(tx, nodeId, at).map(revoked -> () -> {
      List<Future<Void>> denials = new ArrayList<>();
      for (TokenRecord t : revoked) denials.add(denylist.deny(t.id(), new Denylist.Entry(true, at.toEpochMilli()), t.expiresAt()));
      return Future.all(denials).mapEmpty();
    });
  }
}
