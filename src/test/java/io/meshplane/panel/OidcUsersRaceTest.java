package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Role;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.RequestInfo;
import io.meshplane.testing.Await;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two first logins of one subject at once, made deterministic on a real PostgreSQL: another
 * transaction inserts the subject's user and holds it uncommitted; the login's upsert reads "no such
 * user", its insert waits on the unique index, and breaks it (23505) when the other commits. The
 * upsert tries once more and finds the user the other made, instead of failing the login.
 */
@Timeout(120)
class OidcUsersRaceTest {
  static final String ISSUER = "https://idp.example";
  static TestCluster cluster;
  static Vertx vertx;
  static Pool pool;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1); // a migrated database
    vertx = Vertx.vertx();
    pool = PgBuilder.pool().with(new PoolOptions().setMaxSize(2)).connectingTo(PgConnectOptions.fromUri(cluster.db().url())).using(vertx)
        .build();
  }

  @AfterAll
  static void stop() throws Exception {
    if (pool != null) pool.close().await(10, TimeUnit.SECONDS);
    if (vertx != null) vertx.close().await(10, TimeUnit.SECONDS);
    if (cluster != null) cluster.close();
  }

  @Test
  void aFirstLoginThatLosesTheRaceOnTheSubjectFindsTheUserTheOtherMade() throws Exception {
    // no Sessions: the mapping is the one the other login wrote, so no session of the user is ended
    OidcUsers users = new OidcUsers(pool, new UserRepository(pool), null, new AuditLog(pool));
    OidcMapping viewer = new OidcMapping("groups", "mesh-viewers", Role.VIEWER, "web", "*");
    JsonObject claims = new JsonObject().put("sub", "race-1").put("preferred_username", "racer");
    try (Connection other = cluster.db().connect(); Connection watch = cluster.db().connect()) {
      other.setAutoCommit(false);
      try (PreparedStatement st = other.prepareStatement("INSERT INTO users (id, username, password_hash, role, team, environment, disabled, "
          + "created_at, updated_at, created_by, source, oidc_issuer, oidc_subject) VALUES ('usr_race_other', 'racer', '!oidc', 'viewer', 'web', '*', "
          + "false, now(), now(), 'oidc', 'oidc', ?, 'race-1')")) {
        st.setString(1, ISSUER);
        st.executeUpdate();
      }
      Future<UserRecord> login = users.upsert(ISSUER, claims, viewer, RequestInfo.NONE);
      Await.until("the login's insert waits on the other's uncommitted row", 30_000, () -> waitingOnALock(watch));
      other.commit();
      UserRecord u = login.await(30, TimeUnit.SECONDS);
      assertEquals("usr_race_other", u.id(), "the user the other login made");
      assertEquals(Role.VIEWER, u.role());
    }
    assertEquals(1L, (long) pool.query("SELECT count(*) FROM users WHERE oidc_subject = 'race-1'").execute().await(10, TimeUnit.SECONDS)
        .iterator().next().getLong(0));
    assertTrue(OidcUsers.unique(io.meshplane.common.Refusal.conflict("taken")));
  }

  static boolean waitingOnALock(Connection watch) {
    try (Statement st = watch.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")) {
      rs.next();
      return rs.getLong(1) > 0;
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
