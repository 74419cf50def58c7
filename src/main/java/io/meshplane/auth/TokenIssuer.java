package io.meshplane.auth;

import io.meshplane.common.Ids;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.sqlclient.SqlClient;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * Creates tokens: stores the metadata (on the caller's connection, so it commits with the caller's
 * audit event) and mints the JWT that is shown once. Used by the token API, by enrollment (agent
 * tokens) and by the bootstrap command line.
 */
public final class TokenIssuer {
  /** A new token: its stored record and the JWT, which exists nowhere else. */
  public record Issued(TokenRecord record, String jwt) {}

  private final Jwts jwts;
  private final TokenRepository repository;
  private final String keyId;

  public TokenIssuer(Jwts jwts, TokenRepository repository, SigningKeys keys) {
    this.jwts = jwts;
    this.repository = repository;
    this.keyId = keys.signingKid();
  }

  public Future<Issued> issue(SqlClient client, String name, Scope scope, String nodeId, Instant expires, String createdBy) {
    Instant now = Times.now();
    String id = Ids.next("tok");
    Instant exp = expires.truncatedTo(ChronoUnit.SECONDS);
    TokenRecord record = new TokenRecord(id, name, scope, nodeId, keyId, exp, now, createdBy, null, null, null, null);
    String jwt = jwts.mint(id, nodeId != null ? nodeId : id, name, scope, exp, now);
    return repository.insert(client, record).map(v -> new Issued(record, jwt));
  }
}
