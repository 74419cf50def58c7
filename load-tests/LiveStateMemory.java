import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.heartbeat.LiveState;
import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Heap cost of the live state per node: one Hazelcast member (configured as the service configures
 * it: Compact LiveNode, BINARY, indexes on heartbeatAt and dirty), N synthetic entries shaped like a
 * typical heartbeat (one endpoint, one route, small telemetry). Reports Hazelcast's own owned-entry
 * memory cost and the measured heap growth after GC, per entry. Loopback only, multicast off.
 *
 * Run: java -Xmx4g -cp target/meshplane.jar load-tests/LiveStateMemory.java [entries, default 1000000]
 */
public class LiveStateMemory {
  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    Config config = new Config();
    config.setClusterName("live-state-memory-" + ThreadLocalRandom.current().nextInt(1_000_000));
    config.setProperty("hazelcast.phone.home.enabled", "false");
    config.setProperty("hazelcast.logging.type", "none");
    config.getNetworkConfig().setPort(0).getJoin().getMulticastConfig().setEnabled(false);
    config.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
    config.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    config.setProperty("hazelcast.socket.bind.any", "false");
    LiveState.configure(config);
    HazelcastInstance hz = Hazelcast.newHazelcastInstance(config);
    try {
      IMap<String, LiveNode> map = hz.getMap(LiveState.MAP);
      long before = usedHeapAfterGc();
      Map<String, LiveNode> batch = new HashMap<>();
      long now = System.currentTimeMillis();
      for (int i = 0; i < n; i++) {
        String id = String.format("nd_01m8%022d", i);
        batch.put(id, new LiveNode(now - (i % 30_000), true,
            new String[] {"198.51." + (i % 250) + "." + (i % 200 + 1) + ":41641"}, "", "fra1",
            new String[] {"10." + (i % 250) + ".0.0/24"}, "{\"agent_version\":\"1.4.0\",\"uptime_s\":" + (i % 100000) + "}"));
        if (batch.size() == 10_000) {
          map.setAll(batch);
          batch.clear();
        }
      }
      if (!batch.isEmpty()) map.setAll(batch);
      long after = usedHeapAfterGc();
      var stats = map.getLocalMapStats();
      System.out.printf("entries: %d (owned %d, backups %d on a single member)%n", map.size(), stats.getOwnedEntryCount(),
          stats.getBackupEntryCount());
      System.out.printf("hazelcast owned-entry memory cost: %.1f bytes per entry%n", stats.getOwnedEntryMemoryCost() / (double) n);
      System.out.printf("heap growth after GC (entries + indexes): %.1f bytes per entry%n", (after - before) / (double) n);
      // What the service then does all day: a full write-behind sweep (dirty == true over every entry)
      // and a staleness scan through the heartbeat-second index. Neither may leave per-entry caches.
      long t0 = System.nanoTime();
      int dirty = map.localKeySet(com.hazelcast.query.Predicates.equal(LiveNode.DIRTY_FIELD, true)).size();
      int old = map.localKeySet(LiveState.heartbeatSecondsBetween(LiveNode.second(now - 40_000), LiveNode.second(now - 15_000))).size();
      long queried = usedHeapAfterGc();
      System.out.printf("after a full dirty sweep (%d found) and an index scan (%d found) in %d ms: %.1f bytes per entry%n",
          dirty, old, (System.nanoTime() - t0) / 1_000_000, (queried - before) / (double) n);
    } finally {
      hz.shutdown();
    }
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(300);
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
