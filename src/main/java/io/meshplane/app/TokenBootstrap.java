package io.meshplane.app;

import io.meshplane.audit.AuditLog;
import io.meshplane.auth.AuthModule;
import io.meshplane.auth.Scope;
import io.meshplane.auth.TokenService;
import io.meshplane.common.Blocking;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.time.Instant;

/**
 * {@code meshplane token create}: the first admin token, written straight to the database (as
 * {@code user create} writes the first user). The wiring only: the rules, the issuing and the audit
 * event are the token feature's ({@link TokenService#createFromCli}).
 */
public final class TokenBootstrap {
  private TokenBootstrap() {}

  /** Checks the token as the API would, stores it and returns its JWT; a {@code Refusal} when the token is not allowed. */
  public static String create(MeshConfig config, String name, Scope scope, Instant expires) {
    TokenService.checkFromCli(scope, expires, config.tokensMaxLifetime()); // refused before PostgreSQL is even opened
    try (Database db = Database.open(config, true)) {
      db.migrate();
      Vertx vertx = Vertx.vertx();
      try {
        var pool = db.pool(vertx, 1);
        return TokenService.createFromCli(vertx, pool, new AuditLog(pool), config.keysDir(),
            new AuthModule.Settings(config.issuer(), config.tokensMaxLifetime()), name, scope, expires,
            System.getProperty("user.name", "unknown"));
      } finally {
        Blocking.await(vertx.close(), Duration.ofSeconds(10), "closing");
      }
    }
  }
}
