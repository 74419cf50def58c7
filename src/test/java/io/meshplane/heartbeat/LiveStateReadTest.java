package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.meshplane.testing.FreePorts;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The inventory's read of live entries, on two real members: a page of ids, some of them owned by the
 * other member and some never heard of, gives exactly the entries that exist, whether it is read with
 * one getAll (small pages) or one getAsync per id (large pages), and completes on the caller's context.
 */
class LiveStateReadTest {
  private static HazelcastInstance a;
  private static HazelcastInstance b;
  private static Vertx vertx;

  @BeforeAll
  static void cluster() {
    String name = "live-read-" + UUID.randomUUID();
    int portA = FreePorts.next();
    int portB = FreePorts.next();
    a = Hazelcast.newHazelcastInstance(FlushProcessorsTest.config(name, portA, portB));
    b = Hazelcast.newHazelcastInstance(FlushProcessorsTest.config(name, portB, portA));
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void stop() {
    if (vertx != null) vertx.close().await();
    if (b != null) b.shutdown();
    if (a != null) a.shutdown();
  }

  @Test
  void aPageReadsExactlyTheEntriesThatExistOnBothMembersAndAnswersOnTheCallersContext() throws Exception {
    LiveState state = new LiveState(vertx, a);
    IMap<String, LiveNode> map = b.getMap(LiveState.MAP);
    for (int size : new int[] {1, 10, LiveState.GET_ALL_MAX, LiveState.GET_ALL_MAX + 1, 1000}) {
      Set<String> ids = new LinkedHashSet<>();
      Map<String, LiveNode> expected = new HashMap<>();
      for (int i = 0; i < size; i++) {
        String id = "nd_read" + size + "_" + i;
        ids.add(id);
        if (i % 3 == 2) continue; // never heard of: absent from the answer
        LiveNode n = new LiveNode(1_700_000_000_000L + i, i % 2 == 0, new String[] {"198.51.100." + (i % 250) + ":41641"}, "key" + i, "r1",
            new String[0], "{\"i\":" + i + "}");
        map.set(id, n);
        expected.put(id, n);
      }
      int ownedByB = 0;
      for (String id : expected.keySet()) {
        if (b.getCluster().getLocalMember().equals(a.getPartitionService().getPartition(id).getOwner())) ownedByB++;
      }
      if (size >= LiveState.GET_ALL_MAX) assertTrue(ownedByB > 0 && ownedByB < expected.size(), "entries on both members");
      Context ctx = vertx.getOrCreateContext();
      CompletableFuture<Map<String, LiveNode>> result = new CompletableFuture<>();
      CompletableFuture<Context> answeredOn = new CompletableFuture<>();
      ctx.runOnContext(v -> state.getAll(ids).onComplete(ar -> {
        answeredOn.complete(Vertx.currentContext());
        if (ar.succeeded()) result.complete(ar.result()); else result.completeExceptionally(ar.cause());
      }));
      Map<String, LiveNode> got = result.get(30, TimeUnit.SECONDS);
      String page = "a page of " + size + " ids (" + ownedByB + " of the entries owned by the other member)";
      assertEquals(new TreeSet<>(expected.keySet()), new TreeSet<>(got.keySet()), page);
      assertEquals(expected, got, page);
      for (Map.Entry<String, LiveNode> e : got.entrySet()) {
        assertEquals(e.getValue().telemetry(), expected.get(e.getKey()).telemetry(), e.getKey());
        assertEquals(e.getValue().dirty(), expected.get(e.getKey()).dirty(), e.getKey());
      }
      assertSame(ctx, answeredOn.get(30, TimeUnit.SECONDS), "a page of " + size + " ids answers on the caller's context");
    }
  }
}
