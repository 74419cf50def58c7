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

/** {@link AgentCredentials} over the token table, the issuer and the denylist (built by {@link AuthModule}). */
final class TokenAgentCredentials implements AgentCredentials {
  private final TokenIssuer issuer;
  private final TokenRepository repository;
  private final Denylist denylist;
  private final Duration lifetime;

  TokenAgentCredentials(TokenIssuer issuer, TokenRepository repository, Denylist denylist, Duration lifetime) {
    this.issuer = issuer;
    this.repository = repository;
    this.denylist = denylist;
    this.lifetime = lifetime;
  }

  /** Lifetime {@code tokens.max_lifetime}. */
  @Override
  public Future<Credential> issue(SqlClient tx, String nodeId, String nodeName, Boundary boundary, String issuedBy) {
    Instant now = Times.now();
    return issuer.issue(tx, "agent:" + nodeName, new Scope(boundary.team(), boundary.environment(), Surface.AGENT), nodeId,
            now.plus(lifetime), issuedBy)
        .map(issued -> new Credential(issued.jwt(), issued.record().expiresAt()));
  }

  @Override
  public Future<Supplier<Future<Void>>> revokeAll(SqlClient tx, String nodeId, Instant at) {
    return repository.revokeForNode(tx, nodeId, at).map(revoked -> () -> {
      List<Future<Void>> denials = new ArrayList<>();
      for (TokenRecord t : revoked) denials.add(denylist.deny(t.id(), new Denylist.Entry(true, at.toEpochMilli()), t.expiresAt()));
      return Future.all(denials).mapEmpty();
    });
  }
}
