package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.hazelcast.cluster.Member;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.map.IMap;
import com.hazelcast.partition.Partition;
import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Metrics;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.client.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A member dies abruptly: no acknowledged heartbeat is lost, from the live map or (after the flush)
 * from PostgreSQL; and the reason why: a heartbeat is answered only once its backup copy is stored.
 */
@Timeout(240)
class MemberLossTest {
  @Test
  void killingOneOfThreeMembersLosesNoAcknowledgedHeartbeat() throws Exception {
    try (TestCluster cluster = TestCluster.of(3)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Map<String, String> settings = Map.of("writebehind.flush_interval", "5s");
      Meshplane a = cluster.start(0, settings);
      Meshplane b = cluster.start(1, settings);
      Meshplane c = cluster.start(2, settings);
      String root = cluster.admin();
      List<Nodes.Enrolled> fleet = new ArrayList<>();
      for (int i = 0; i < 300; i++) fleet.add(Nodes.enroll(http, a.coordinatorPort(), root, "n-" + i, "loss", "prod"));
      Meshplane[] members = {a, b, c};
      List<Future<HttpResponse<Buffer>>> burst = new ArrayList<>();
      for (int i = 0; i < fleet.size(); i++) {
        burst.add(http.sendAsync(HttpMethod.POST, members[i % 3].coordinatorPort(), "/v1/nodes/" + fleet.get(i).id() + "/heartbeat",
            fleet.get(i).token(), Nodes.beat(i)));
      }
      Map<String, Long> acked = new HashMap<>();
      for (int i = 0; i < burst.size(); i++) {
        HttpResponse<Buffer> r = Http.await(burst.get(i), 60);
        assertEquals(200, r.statusCode(), r.bodyAsString());
        acked.put(fleet.get(i).id(), Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli());
      }

      // abrupt: no migration, no goodbye (the flush interval is long, so most entries are still dirty)
      c.hazelcast().getLifecycleService().terminate();

      Map<String, LiveNode> live = a.heartbeat().live().map().getAll(Set.copyOf(acked.keySet()));
      Map<String, Long> inMap = new HashMap<>();
      live.forEach((id, n) -> inMap.put(id, n.heartbeatAt()));
      assertEquals(acked, inMap, "every acknowledged heartbeat is in the live map");

      Map<String, Long> stored = Await.until("the database converges to every acknowledged heartbeat", 20_000, () -> {
        Map<String, Long> rows = new HashMap<>();
        try (Connection conn = db.connect(); Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = 'loss'")) {
          while (rs.next()) rows.put(rs.getString(1), rs.getObject(2) == null ? null : rs.getLong(2));
        }
        return rows;
      }, acked::equals);
      assertEquals(acked, stored, "the database converges to every acknowledged heartbeat");
    }
  }

  /**
   * Holds every partition thread of the member that keeps the backups, then sends a heartbeat whose
   * primary copy lives on the other member: the answer must wait until the backup is stored (an
   * answer before that could be lost with the primary's member; Hazelcast's {@code putAll}/{@code
   * setAll} would answer at once here: they do not wait for backups). Then holds them past
   * Hazelcast's backup timeout: the heartbeat fails with 503 instead of being acknowledged unbacked.
   */
  @Test
  void aHeartbeatIsAnsweredOnlyOnceItsBackupIsStored() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Meshplane a = cluster.start(0);
      Meshplane b = cluster.start(1);
      String root = cluster.admin();
      HazelcastInstance hzA = a.hazelcast();
      HazelcastInstance hzB = b.hazelcast();
      Member memberA = hzA.getCluster().getLocalMember();
      Member memberB = hzB.getCluster().getLocalMember();
      Await.until("partitions settled between the two members", 30_000, () -> hzA.getPartitionService().isClusterSafe());

      // a node whose live entry's primary copy is on A (so its backup is on B)
      Nodes.Enrolled node = null;
      for (int i = 0; node == null; i++) {
        assertTrue(i < 40, "no enrolled node landed in a partition owned by A");
        Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "acked-" + i, "acks", "prod");
        if (memberA.equals(hzA.getPartitionService().getPartition(n.id()).getOwner())) node = n;
      }
      // first use of the agent token (signature check, token cache) before anything is held
      HttpResponse<Buffer> first = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(), Nodes.beat(1));
      assertEquals(200, first.statusCode(), first.bodyAsString());
      long firstAt = Instant.parse(first.bodyAsJsonObject().getString("server_time")).toEpochMilli();
      String id = node.id();

      // hold each of B's partition threads, then beat: no answer while the backup cannot be stored
      CountDownLatch release = new CountDownLatch(1);
      List<CompletionStage<Object>> holds = holdPartitionThreads(hzB, release);
      Future<HttpResponse<Buffer>> answer = http.sendAsync(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat",
          node.token(), Nodes.beat(2));
      try {
        // the primary copy on A holds the new heartbeat: all that is missing for an answer is the backup
        Await.until("the primary copy on A holds heartbeat 2", () -> hzA.<String, LiveNode>getMap(LiveState.MAP).get(id).heartbeatAt() > firstAt);
        Thread.sleep(500); // not synchronisation: the window in which an answer that did not wait for the backup would arrive
        assertFalse(answer.isComplete(), "the heartbeat was answered before its backup was stored");
      } finally {
        release.countDown();
      }
      HttpResponse<Buffer> r = Http.await(answer, 30);
      assertEquals(200, r.statusCode(), r.bodyAsString());
      for (CompletionStage<Object> h : holds) h.toCompletableFuture().get(30, TimeUnit.SECONDS);
      long acked = Instant.parse(r.bodyAsJsonObject().getString("server_time")).toEpochMilli();
      assertEquals(acked, hzB.<String, LiveNode>getMap(LiveState.MAP).get(node.id()).heartbeatAt());

      // the backup never acknowledges in time (Hazelcast waits 5 s): 503, not a 200 held by one member only
      CountDownLatch release2 = new CountDownLatch(1);
      List<CompletionStage<Object>> holds2 = holdPartitionThreads(hzB, release2);
      HttpResponse<Buffer> timedOut;
      try {
        timedOut = Http.await(http.sendAsync(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat",
            node.token(), Nodes.beat(3)), 30);
      } finally {
        release2.countDown();
      }
      assertEquals(503, timedOut.statusCode(), timedOut.bodyAsString());
      assertEquals("unavailable", timedOut.bodyAsJsonObject().getString("code"));
      for (CompletionStage<Object> h : holds2) h.toCompletableFuture().get(30, TimeUnit.SECONDS);
      HttpResponse<Buffer> after = http.send(HttpMethod.POST, a.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(), Nodes.beat(4));
      assertEquals(200, after.statusCode(), "the next heartbeat is accepted once the backup member answers again");
    }
  }

  /**
   * The partitions of a member that left arrive at the survivor with dirty entries stamped long ago
   * (outside the write-behind's heartbeat-time window: a slow handover, writes retried during a
   * migration). The survivor sweeps on the gain and writes them at its next flush, not at its periodic
   * sweep a minute later.
   */
  @Test
  void aTakenOverBacklogIsWrittenAtTheNextFlushNotAtThePeriodicSweep() throws Exception {
    try (TestCluster cluster = TestCluster.of(2)) {
      Http http = cluster.http();
      TestDatabase db = cluster.db();
      Map<String, String> settings = Map.of("writebehind.flush_interval", "200ms");
      Meshplane a = cluster.start(0, settings);
      Meshplane b = cluster.start(1, settings);
      String root = cluster.admin();
      HazelcastInstance hzB = b.hazelcast();
      Await.until("partitions settled between the two members", 30_000, () -> hzB.getPartitionService().isClusterSafe());
      double flushesAtSettle = Metrics.value(http, b.coordinatorPort(), Metrics.FLUSHES);
      Member memberB = hzB.getCluster().getLocalMember();
      IMap<String, LiveNode> map = b.heartbeat().live().map();
      List<String> ownedByB = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        Nodes.Enrolled n = Nodes.enroll(http, a.coordinatorPort(), root, "handover-" + i, "handover", "prod");
        if (memberB.equals(hzB.getPartitionService().getPartition(n.id()).getOwner())) ownedByB.add(n.id());
      }
      assertTrue(ownedByB.size() >= 5, "too few nodes landed in B's partitions: " + ownedByB.size());
      // B gained its partitions when it joined, and sweeps once more RESWEEP_AFTER_GAIN_MS later: that
      // sweep (legitimately) writes every dirty entry, so the backlog is planted after it (a whole flush
      // after the settling noted the gain, and no resweep is planned any more). Should a late gain plan
      // another, the planting is undone in PostgreSQL and repeated (there is one resweep per gain, so a
      // window that really reached old stamps fails every attempt).
      Await.until("B's resweep after its gain is done", FlushPlanner.RESWEEP_AFTER_GAIN_MS + 15_000,
          () -> Metrics.value(http, b.coordinatorPort(), Metrics.FLUSHES) >= flushesAtSettle + 2 && !b.heartbeat().resweepPlanned());
      Map<String, Long> onB = new HashMap<>();
      for (int attempt = 1; ; attempt++) {
        // stamped 40 s ago: older than any flush window, younger than the periodic sweep's minute
        long stamp = (System.currentTimeMillis() - 40_000) / 1000 * 1000;
        onB.clear();
        for (String id : ownedByB) {
          map.set(id, new LiveNode(stamp, true, new String[] {"192.0.2.1:41641"}, "", "", new String[0], "{}"));
          onB.put(id, stamp);
        }
        Metrics.awaitFlushes(http, 2, b.coordinatorPort()); // B's own flushes since the planting did not reach them
        if (storedHeartbeats(db, "handover").isEmpty()) break;
        assertTrue(attempt < 3, "B's own flush window does not reach entries stamped 40 s ago");
        try (Connection conn = db.connect(); Statement st = conn.createStatement()) {
          st.executeUpdate("UPDATE nodes SET heartbeat_at = NULL WHERE team = 'handover'");
        }
      }

      double sweepsBefore = takeoverSweeps(http, a.coordinatorPort());
      hzB.getLifecycleService().terminate();

      Map<String, Long> stored = Await.until("the survivor writes the backlog it took over within seconds", 10_000,
          () -> storedHeartbeats(db, "handover"), onB::equals);
      assertEquals(onB, stored, "the survivor writes the backlog it took over within seconds");
      assertTrue(takeoverSweeps(http, a.coordinatorPort()) > sweepsBefore, "the takeover sweep is counted");
    }
  }

  private static double takeoverSweeps(Http http, int port) {
    return Metrics.value(http, port, "mesh_writebehind_takeover_sweeps_total");
  }

  private static Map<String, Long> storedHeartbeats(TestDatabase db, String team) throws Exception {
    Map<String, Long> stored = new HashMap<>();
    try (Connection conn = db.connect(); Statement st = conn.createStatement();
         ResultSet rs = st.executeQuery("SELECT id, (extract(epoch FROM heartbeat_at) * 1000)::bigint FROM nodes WHERE team = '" + team
             + "' AND heartbeat_at IS NOT NULL")) {
      while (rs.next()) stored.put(rs.getString(1), rs.getLong(2));
    }
    return stored;
  }

  /** One blocking entry processor in every partition {@code hz} owns: each of its partition threads waits for {@code release}. */
  private static List<CompletionStage<Object>> holdPartitionThreads(HazelcastInstance hz, CountDownLatch release) {
    Member self = hz.getCluster().getLocalMember();
    Set<Integer> owned = new java.util.HashSet<>();
    for (Partition p : hz.getPartitionService().getPartitions()) {
      if (self.equals(p.getOwner())) owned.add(p.getPartitionId());
    }
    IMap<String, String> blockers = hz.getMap("test.hold-partition-threads");
    List<CompletionStage<Object>> holds = new ArrayList<>();
    for (int i = 0; !owned.isEmpty(); i++) {
      String key = "hold-" + i;
      if (owned.remove(hz.getPartitionService().getPartition(key).getPartitionId())) holds.add(blockers.submitToKey(key, new Hold(release)));
    }
    return holds;
  }

  /** Blocks the partition thread it runs on until released (runs in this JVM only: local calls are not serialized). */
  private static final class Hold implements EntryProcessor<String, String, Object> {
    private final transient CountDownLatch release;

    Hold(CountDownLatch release) {
      this.release = release;
    }

    @Override
    public Object process(java.util.Map.Entry<String, String> entry) {
      try {
        release.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return null;
    }

    @Override
    public EntryProcessor<String, String, Object> getBackupProcessor() {
      return null;
    }
  }
}
