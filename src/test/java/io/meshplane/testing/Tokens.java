package io.meshplane.testing;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.auth.Scope;
import io.meshplane.auth.TokenIssuer;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/** Issues real tokens through a replica's own issuer (same keys, same table), as the bootstrap command does. */
public final class Tokens {
  private Tokens() {}

  public static TokenIssuer.Issued issue(Meshplane app, String team, String environment, Surface surface) {
    return issue(app, "test-" + surface.wire, new Scope(team, environment, surface), null, Instant.now().plus(Duration.ofDays(1)));
  }

  public static TokenIssuer.Issued issue(Meshplane app, String name, Scope scope, String nodeId, Instant expires) {
    try {
      return app.pool()
          .withTransaction(tx -> app.auth().issuer().issue(tx, name, scope, nodeId, expires, "cli")) // as the bootstrap command records it
          .await(20, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError(e);
    }
  }

  public static String admin(Meshplane app) {
    return issue(app, "*", "*", Surface.ADMIN).jwt();
  }
}
