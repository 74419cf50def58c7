package io.meshplane.heartbeat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.hazelcast.cluster.Member;
import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.meshplane.testing.Await;
import io.meshplane.testing.FreePorts;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The write-behind's entry processors on two real members, called from one member on keys the other
 * owns: the processors and their backups travel in the Compact format, and one settling pass clears a
 * dirty mark only where the entry still holds what was written, and reads everything else dirty.
 */
class FlushProcessorsTest {
  private static HazelcastInstance a;
  private static HazelcastInstance b;

  @BeforeAll
  static void cluster() {
    String name = "flush-processors-" + UUID.randomUUID();
    int portA = FreePorts.next();
    int portB = FreePorts.next();
    a = Hazelcast.newHazelcastInstance(config(name, portA, portB));
    b = Hazelcast.newHazelcastInstance(config(name, portB, portA));
  }

  static Config config(String name, int port, int other) {
    Config c = new Config().setClusterName(name);
    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setProperty("hazelcast.logging.type", "slf4j");
    c.setProperty("hazelcast.socket.bind.any", "false");
    c.setProperty("hazelcast.wait.seconds.before.join", "0");
    c.getNetworkConfig().setPort(port).setPortAutoIncrement(false).getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    c.getNetworkConfig().getJoin().getMulticastConfig().setEnabled(false);
    c.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
    c.getNetworkConfig().getJoin().getTcpIpConfig().setEnabled(true).addMember("127.0.0.1:" + port).addMember("127.0.0.1:" + other);
    LiveState.configure(c);
    return c;
  }

  @AfterAll
  static void stop() {
    if (b != null) b.shutdown();
    if (a != null) a.shutdown();
  }

  private static LiveNode live(long at, boolean dirty, String endpoint) {
    return new LiveNode(at, dirty, new String[] {endpoint}, "", "", new String[] {"10.1.0.0/24"}, "{}");
  }

  /** Keys whose partition the member {@code b} owns (so calls from {@code a} are remote). */
  private static List<String> keysOwnedByB(int n) {
    Member owner = b.getCluster().getLocalMember();
    List<String> keys = new java.util.ArrayList<>();
    for (int i = 0; keys.size() < n; i++) {
      String k = "nd_flush" + i;
      if (owner.equals(a.getPartitionService().getPartition(k).getOwner())) keys.add(k);
    }
    return keys;
  }

  @Test
  void liveNodesRoundTripThroughTheCompactLayout() {
    IMap<String, LiveNode> onA = a.getMap(LiveState.MAP);
    IMap<String, LiveNode> onB = b.getMap(LiveState.MAP);
    List<LiveNode> shapes = List.of(
        new LiveNode(1_795_000_123_456L, true, new String[] {"198.51.100.7:41641", "[2001:db8::1]:41641"},
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "fra1", new String[] {"10.1.0.0/24", "fd00::/64"},
            "{\"agent_version\":\"1.4.0\"}"),
        new LiveNode(1_795_000_123_000L, false, new String[0], "", "", new String[0], "{}"),
        new LiveNode(1_795_000_123_999L, true, new String[] {"198.51.100.7:1"}, "", "", new String[] {"10.0.0.0/8"}, "{}"),
        // before the field's 2020 origin, and in 2080 (32-bit seconds from 1970 end in 2038)
        new LiveNode(1_500_000_000_001L, true, new String[0], "", "", new String[0], "{}"),
        new LiveNode(3_500_000_000_999L, true, new String[0], "", "", new String[0], "{}"));
    for (int i = 0; i < shapes.size(); i++) {
      onA.set("nd_shape" + i, shapes.get(i));
      assertEquals(shapes.get(i), onB.get("nd_shape" + i), "shape " + i);
      assertEquals(shapes.get(i).heartbeatAt(), onB.get("nd_shape" + i).heartbeatAt(), "shape " + i);
    }
  }

  @Test
  void oneSettlingPassClearsWhatIsUnchangedSinceWrittenAndReadsWhatIsDirtyAcrossMembers() throws Exception {
    assertEquals(2, a.getCluster().getMembers().size());
    IMap<String, LiveNode> map = a.getMap(LiveState.MAP);
    List<String> keys = keysOwnedByB(4);
    String settled = keys.get(0); // written by the previous flush, no heartbeat since
    String changed = keys.get(1); // written by the previous flush, then a newer heartbeat
    String fresh = keys.get(2); // dirty, never written
    String clean = keys.get(3);
    map.set(settled, live(1000, true, "198.51.100.1:1"));
    map.set(changed, live(1000, true, "198.51.100.2:1"));
    map.set(fresh, live(1500, true, "198.51.100.3:1"));
    map.set(clean, live(1000, false, "198.51.100.4:1"));
    map.set(changed, live(2000, true, "198.51.100.9:1"));

    String[] writtenIds = {settled, changed};
    LiveNode[] writtenValues = {live(1000, true, "198.51.100.1:1"), live(1000, true, "198.51.100.2:1")};
    Map<String, LiveNode> read = map.submitToKeys(new HashSet<>(keys), new FlushProcessors.Settle(writtenIds, writtenValues))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);

    assertEquals(Set.of(changed, fresh), read.keySet(), "what is dirty and not already written is read");
    assertEquals(live(2000, true, "198.51.100.9:1"), read.get(changed));
    assertEquals(live(1500, true, "198.51.100.3:1"), read.get(fresh));
    assertFalse(map.get(settled).dirty(), "unchanged since written: the mark is cleared");
    assertEquals(1000, map.get(settled).heartbeatAt());
    assertTrue(map.get(changed).dirty(), "the newer heartbeat is still to be written");
    assertTrue(map.get(fresh).dirty(), "read, not cleared: not written yet");
    assertFalse(map.get(clean).dirty());

    // With nothing written before, the pass only reads (and clears nothing).
    Map<String, LiveNode> again = map.submitToKeys(new HashSet<>(keys), new FlushProcessors.Settle(new String[0], new LiveNode[0]))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(Set.of(changed, fresh), again.keySet());

    // The backup copy (on a) applied the same clearing: Hazelcast sends entry-processor backups
    // asynchronously (a lost one only means one more identical row write by the next owner). Once b's
    // backups are in sync (their replica versions match the primaries'), the owner is taken away: a
    // promotes its backup copy.
    HazelcastInstance owner = b;
    Await.until("b's backups in sync on a", () -> owner.getPartitionService().isLocalMemberSafe());
    b.getLifecycleService().terminate();
    b = null;
    IMap<String, LiveNode> survivor = a.getMap(LiveState.MAP);
    assertFalse(survivor.get(settled).dirty(), "the backup copy applied the same clearing");
    assertTrue(survivor.get(changed).dirty());
    assertTrue(survivor.get(fresh).dirty());
  }
}
