package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The overview's series across two real replicas (real Hazelcast members, real PostgreSQL), sampled
 * every 200 ms: both replicas' heartbeats are summed, the mesh's node counts are taken once (not once
 * per replica), an operation that expires is counted by the replica that closed it, and the answer of a
 * window has its shape; a narrower caller gets no whole-mesh figures.
 */
@Timeout(180)
class OverviewSeriesTest {
  static TestCluster cluster;
  static Meshplane a;
  static Meshplane b;
  static Http http;
  static PanelSession root;
  static PanelSession teamUser;

  @BeforeAll
  static void start() {
    cluster = TestCluster.started(2, Map.of("panel.series_interval", "200ms", "operations.deadline", "1s",
        "panel.api_rate", "1000", "panel.api_burst", "1000"));
    a = cluster.replica(0);
    b = cluster.replica(1);
    http = cluster.http();
    PanelSession.user(a, "root", "admin", "*", "*");
    PanelSession.user(a, "teamer", "viewer", "team-a", "prod");
    root = PanelSession.signIn(http, a.panelPort(), "root");
    teamUser = PanelSession.signIn(http, b.panelPort(), "teamer");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) cluster.close();
  }

  @Test
  void bothReplicasHeartbeatsAreSummedAndTheCountsTakenOnce() {
    List<Nodes.Enrolled> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) nodes.add(Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "series-" + i, "team-a", "prod"));
    Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "series-pending", "team-a", "prod");
    // 7 heartbeats through replica a and 5 through replica b: each replica counts its own
    int sent = 0;
    for (int i = 0; i < 7; i++, sent++) beat(a, nodes.get(i % 3), i);
    for (int i = 0; i < 5; i++, sent++) beat(b, nodes.get(i % 3), 100 + i);
    int total = sent;
    long samplesA = a.panel().seriesSamples();
    long samplesB = b.panel().seriesSamples();

    // the merged series, read through replica b: every heartbeat once, whichever replica took it
    JsonObject s = Await.until("all " + total + " heartbeats in the merged series, and the counts sampled", 20_000,
        () -> series(b, root, "1h"), x -> heartbeats(x) == total && last(x, "online") != null && ((Number) last(x, "online")).longValue() == 3);
    assertTrue(a.panel().seriesSamples() > samplesA && b.panel().seriesSamples() > samplesB, "both replicas sampled");
    assertEquals(2, a.hazelcast().getMap(SeriesSampler.MAP).size(), "one ring per replica");
    // the mesh's counts are cluster-wide: 3 online (waited for above), not 6 though two replicas sample; the
    // pending ones are this test's node and the other tests' (a node enrolled for an operation)
    long pending = ((Number) last(s, "pending")).longValue();
    assertTrue(pending >= 1 && pending <= 2, "pending " + pending);
    assertEquals(0L, ((Number) last(s, "stale")).longValue());
    // the same answer through the other replica
    Await.until("replica a merges the same heartbeats", () -> series(a, root, "1h"), x -> heartbeats(x) == total);

    // the shape of a window
    assertEquals("1h", s.getString("window"));
    assertEquals(0.2, s.getDouble("step_s"), 1e-9);
    JsonArray ts = s.getJsonArray("timestamps");
    assertEquals(360, ts.size());
    for (String name : SeriesMerge.NAMES) assertEquals(360, s.getJsonObject("series").getJsonArray(name).size(), name);
    assertEquals(0.2, ts.getDouble(1) - ts.getDouble(0), 1e-6);
    assertNull(s.getJsonObject("series").getJsonArray("online").getValue(0), "before the cluster started: a gap");
    JsonObject day = series(a, root, "24h");
    assertEquals(288, day.getJsonArray("timestamps").size());
    assertEquals(6.0, day.getDouble("step_s"), 1e-9);
  }

  @Test
  void anExpiredOperationIsCountedOnceByTheReplicaThatClosedIt() {
    Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), cluster.admin(), "series-op", "team-b", "prod");
    HttpResponse<Buffer> op = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + n.id() + "/rekey", cluster.admin(), null);
    assertEquals(202, op.statusCode(), op.bodyAsString());
    // no agent completes it: it expires after operations.deadline (1 s); both replicas sweep, one closes it
    Await.until("the expired operation in the series", 20_000, () -> series(a, root, "1h"), x -> sum(x, "operations_expired") == 1);
    assertEquals(0, sum(series(b, root, "1h"), "operations_succeeded"));
  }

  @Test
  void aCallerWhoDoesNotSeeTheWholeMeshGetsNoMeshFigures() {
    JsonObject s = series(b, teamUser, "1h");
    assertEquals("withheld", s.getString("scope"));
    assertEquals(0, s.getJsonArray("timestamps").size());
    assertTrue(s.getString("detail").contains("whole mesh"));
    HttpResponse<Buffer> bad = root.get(a.panelPort(), "/api/v1/overview/series?window=7d");
    assertEquals(400, bad.statusCode());
    assertEquals("window", bad.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"));
    assertEquals(400, root.get(a.panelPort(), "/api/v1/overview/series?windw=1h").statusCode());
  }

  private static void beat(Meshplane replica, Nodes.Enrolled node, int seq) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, replica.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(),
        Nodes.beat(seq));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  private static JsonObject series(Meshplane replica, PanelSession who, String window) {
    HttpResponse<Buffer> r = who.get(replica.panelPort(), "/api/v1/overview/series?window=" + window);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  /** Heartbeats in the window: the rates times the step, summed. */
  private static long heartbeats(JsonObject s) {
    double step = s.getDouble("step_s");
    double sum = 0;
    for (Object v : s.getJsonObject("series").getJsonArray("heartbeats_per_second")) {
      if (v instanceof Number n) sum += n.doubleValue() * step;
    }
    return Math.round(sum);
  }

  private static long sum(JsonObject s, String name) {
    long sum = 0;
    for (Object v : s.getJsonObject("series").getJsonArray(name)) {
      if (v instanceof Number n) sum += n.longValue();
    }
    return sum;
  }

  /** The newest non-null value of a series. */
  private static Object last(JsonObject s, String name) {
    JsonArray values = s.getJsonObject("series").getJsonArray(name);
    for (int i = values.size() - 1; i >= 0; i--) {
      if (values.getValue(i) != null) return values.getValue(i);
    }
    return null;
  }
}
