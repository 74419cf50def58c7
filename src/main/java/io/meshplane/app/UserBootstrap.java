package io.meshplane.app;

import io.meshplane.audit.AuditLog;
import io.meshplane.common.Blocking;
import io.meshplane.panel.UserService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.time.Duration;

/** {@code meshplane user create}: the first panel user, written straight to the database (as {@code token create} writes the first token). */
public final class UserBootstrap {
  private UserBootstrap() {}

  /** Validates {@code body} as {@code POST /api/v1/users} would, stores the user and returns it (never the password). */
  public static JsonObject create(MeshConfig config, JsonObject body) {
    UserService.checkNew(body); // a bad value is refused before PostgreSQL is even opened
    try (Database db = Database.open(config, true)) {
      db.migrate();
      Vertx vertx = Vertx.vertx();
      try {
        var pool = db.pool(vertx, 1);
        return UserService.createFromCli(pool, new AuditLog(pool), body, System.getProperty("user.name", "unknown"));
      } finally {
        Blocking.await(vertx.close(), Duration.ofSeconds(10), "closing");
      }
    }
  }
}
