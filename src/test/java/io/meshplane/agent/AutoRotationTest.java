package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Surface;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The automatic intermediate rotation: nothing before two thirds of the intermediate's life; from then
 * the rotation clock stages a new intermediate and advances each phase once the fleet (a real agent)
 * holds what it needs, until the old intermediate retires; every step audited under the system. The
 * clock is driven with a time two thirds on, instead of waiting 60 days.
 */
@Timeout(120)
class AutoRotationTest {
  static TestCluster cluster;
  static Meshplane replica;
  static Http http;
  static String admin;
  @TempDir static Path dir;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(1, Map.of("heartbeat.interval", "1s", "meshca.secret", "a test secret for MeshCA, at least thirty-two bytes"));
    replica = cluster.replica(0);
    http = cluster.http();
    admin = cluster.admin();
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  JsonObject rotation() {
    return http.get(replica.coordinatorPort(), "/v1/meshca/rotation", admin).bodyAsJsonObject();
  }

  void tick(Instant at) {
    io.meshplane.testing.Http.await(replica.meshca().rotationTick(at), 30);
  }

  @Test
  void theIntermediateRotatesItselfFromTwoThirdsOfItsLifeAndRetiresOnceTheFleetRenewed() {
    String enroll = Tokens.issue(replica, "auto", "prod", Surface.ENROLLMENT).jwt();
    NodeAgent a = NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of("http://127.0.0.1:" + replica.coordinatorPort())), enroll,
        "auto-a", List.of("tag:web"), dir.resolve("auto-a"), "127.0.0.1", 0, Backoff.standard()));
    try {
      JsonObject c = Await.until("a certificate", 30_000, () -> http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("certificate"),
          x -> x != null && "valid".equals(x.getString("verdict")));
      String old = c.getString("issuer");
      // 59 days into a 90-day intermediate: not yet
      tick(Instant.now().plus(Duration.ofDays(59)));
      assertEquals(null, rotation().getValue("rotation"));
      // 61 days: staged by the clock, then advanced phase by phase as the agent follows
      Instant later = Instant.now().plus(Duration.ofDays(61));
      tick(later);
      JsonObject r = rotation().getJsonObject("rotation");
      assertEquals(true, r.getBoolean("automatic"), r.encode());
      assertEquals("intermediate", r.getString("kind"));
      String id = r.getString("id");
      String fresh = r.getString("new_intermediate");
      JsonObject done = Await.until("the automatic rotation retired", 60_000, () -> {
        tick(later);
        JsonArray h = rotation().getJsonArray("history");
        return h.isEmpty() ? null : h.getJsonObject(0);
      }, x -> x != null && id.equals(x.getString("id")) && "retired".equals(x.getString("phase")));
      assertEquals(true, done.getBoolean("automatic"));
      JsonObject now = http.get(a.listenPort(), "/info").bodyAsJsonObject().getJsonObject("certificate");
      assertEquals(fresh, now.getString("issuer"), "the agent renewed from the new intermediate before the old one retired");
      assertTrue(!old.equals(now.getString("issuer")));
      String audit = http.get(replica.coordinatorPort(), "/v1/audit?action=meshca.rotation.advance", admin).bodyAsString();
      assertTrue(audit.contains("auto-rotate") && audit.contains(id), audit);
      // the fresh intermediate is not due a day later: the tick starts nothing
      tick(Instant.now().plus(Duration.ofDays(1)));
      assertEquals(null, rotation().getValue("rotation"));
    } finally {
      a.close();
    }
  }
}
