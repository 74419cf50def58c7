package io.meshplane.app;

import io.meshplane.access.Surface;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.auth.Jwts;
import io.meshplane.auth.Scope;
import io.meshplane.auth.SigningKeys;
import io.meshplane.auth.TokenIssuer;
import io.meshplane.auth.TokenRepository;
import io.meshplane.common.Blocking;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;

/**
 * {@code meshplane token create}: writes a token straight to the database (how the first admin token
 * is made) with the same issuer, signing keys and audit trail as the API, and returns the JWT.
 */
public final class TokenBootstrap {
  private TokenBootstrap() {}

  public static String create(MeshConfig config, String name, Scope scope, Instant expires) {
    if (scope.surface() == Surface.AGENT) throw new IllegalArgumentException("agent tokens are issued to nodes at enrollment only");
    Instant now = Instant.now();
    if (!expires.isAfter(now)) throw new IllegalArgumentException("--expires must be in the future");
    if (expires.isAfter(now.plus(config.tokensMaxLifetime()))) {
      throw new IllegalArgumentException("--expires must be at most tokens.max_lifetime ahead");
    }
    try (Database db = Database.open(config, true)) {
      db.migrate();
      Vertx vertx = Vertx.vertx();
      try {
        Pool pool = db.pool(vertx, 1);
        SigningKeys keys = SigningKeys.loadOrCreate(config.keysDir());
        TokenIssuer issuer = new TokenIssuer(new Jwts(vertx, keys, config.issuer()), new TokenRepository(pool), keys);
        AuditLog audit = new AuditLog(pool);
        String operator = System.getProperty("user.name", "unknown");
        TokenIssuer.Issued issued = Blocking.await(pool.withTransaction(tx ->
            issuer.issue(tx, name, scope, null, expires, "cli").compose(i -> audit.record(tx, AuditEvent.of(Actor.cli(operator),
                RequestInfo.NONE, "token.create", "token", i.record().id(), AuditEvent.SUCCESS, scope.team(), scope.environment()))
                .map(i))), Duration.ofSeconds(30), "creating the token");
        return issued.jwt();
      } finally {
        Blocking.await(vertx.close(), Duration.ofSeconds(10), "closing");
      }
    }
  }
}
