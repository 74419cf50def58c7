import com.hazelcast.config.Config;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.ReadOnly;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.map.IMap;
import com.hazelcast.nio.serialization.compact.CompactReader;
import com.hazelcast.nio.serialization.compact.CompactSerializer;
import com.hazelcast.nio.serialization.compact.CompactWriter;
import com.hazelcast.partition.PartitionService;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.heartbeat.LiveState;
import java.lang.management.ManagementFactory;
import java.util.*;
import java.util.concurrent.*;

/**
 * CPU of reading a page of live entries from the cluster map, four ways, on one Hazelcast member
 * configured as the service configures it (Compact LiveNode, BINARY), with N entries: getAll of the
 * whole page (Hazelcast 5.3 sends every key to every partition touched, each filters them all), getAll
 * per partition, a read-only entry processor per partition (submitToKeys), and one getAsync per key.
 * Figures are the process's CPU time (all threads) over R pages of random ids, after 50 warm-up pages,
 * three passes each: deterministic enough to compare, unlike throughput on this machine. Loopback only,
 * multicast off. Used to choose how LiveState.getAll reads an inventory page (load-tests/RESULTS.md).
 *
 * Run: java -Xmx3g -cp target/meshplane.jar load-tests/LiveReadCost.java ENTRIES PAGE ROUNDS
 *      (the figures in RESULTS.md: 100000 1000 200, 100000 100 1000, 100000 20 3000)
 */
public class LiveReadCost {
  public static final class Read implements EntryProcessor<String, LiveNode, LiveNode>, ReadOnly {
    public LiveNode process(Map.Entry<String, LiveNode> e) { return e.getValue(); }
    public EntryProcessor<String, LiveNode, LiveNode> getBackupProcessor() { return null; }
  }
  public static final class ReadSer implements CompactSerializer<Read> {
    public Read read(CompactReader in) { return new Read(); }
    public void write(CompactWriter out, Read r) {}
    public String getTypeName() { return "bench.Read"; }
    public Class<Read> getCompactClass() { return Read.class; }
  }
  static com.sun.management.OperatingSystemMXBean OS = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]); int page = Integer.parseInt(args[1]); int rounds = Integer.parseInt(args[2]);
    Config config = new Config();
    config.setClusterName("live-read-" + ThreadLocalRandom.current().nextInt(1_000_000));
    config.setProperty("hazelcast.phone.home.enabled", "false");
    config.setProperty("hazelcast.logging.type", "none");
    config.getNetworkConfig().setPort(0).getJoin().getMulticastConfig().setEnabled(false);
    config.getNetworkConfig().getJoin().getAutoDetectionConfig().setEnabled(false);
    config.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    config.setProperty("hazelcast.socket.bind.any", "false");
    LiveState.configure(config);
    config.getSerializationConfig().getCompactSerializationConfig().addSerializer(new ReadSer());
    HazelcastInstance hz = Hazelcast.newHazelcastInstance(config);
    IMap<String, LiveNode> map = hz.getMap(LiveState.MAP);
    List<String> ids = new ArrayList<>();
    Map<String, LiveNode> batch = new HashMap<>();
    long now = System.currentTimeMillis();
    for (int i = 0; i < n; i++) {
      String id = String.format("nd_01m8%022d", i); ids.add(id);
      batch.put(id, new LiveNode(now, false, new String[] {"203.0.113.7:41641"}, "k" + i, "r1", new String[] {"10.0.0.0/24"}, "{\"os\":\"linux\"}"));
      if (batch.size() == 10_000) { map.putAll(batch); batch.clear(); }
    }
    map.putAll(batch);
    PartitionService ps = hz.getPartitionService();
    Random rnd = new Random(1);
    List<Set<String>> pages = new ArrayList<>();
    for (int r = 0; r < rounds; r++) { Set<String> s = new HashSet<>(); while (s.size() < page) s.add(ids.get(rnd.nextInt(n))); pages.add(s); }
    for (int pass = 0; pass < 3; pass++) {
      run("getAll(all keys)", pages, keys -> map.getAll(keys));
      run("getAll per partition", pages, keys -> {
        Map<Integer, Set<String>> by = group(ps, keys); Map<String, LiveNode> out = new HashMap<>();
        for (Set<String> g : by.values()) out.putAll(map.getAll(g)); return out; });
      run("submitToKeys(Read) per partition", pages, keys -> {
        Map<Integer, Set<String>> by = group(ps, keys); List<CompletableFuture<Map<String, LiveNode>>> fs = new ArrayList<>();
        for (Set<String> g : by.values()) fs.add(map.submitToKeys(g, new Read()).toCompletableFuture());
        Map<String, LiveNode> out = new HashMap<>(); for (var f : fs) out.putAll(f.join()); return out; });
      run("getAsync per key", pages, keys -> {
        Map<String, CompletableFuture<LiveNode>> fs = new HashMap<>();
        for (String k : keys) fs.put(k, map.getAsync(k).toCompletableFuture());
        Map<String, LiveNode> out = new HashMap<>(); fs.forEach((k, f) -> { LiveNode v = f.join(); if (v != null) out.put(k, v); }); return out; });
    }
    hz.shutdown();
  }
  static Map<Integer, Set<String>> group(PartitionService ps, Set<String> keys) {
    Map<Integer, Set<String>> by = new HashMap<>();
    for (String k : keys) by.computeIfAbsent(ps.getPartition(k).getPartitionId(), p -> new HashSet<>()).add(k);
    return by;
  }
  interface Reader { Map<String, LiveNode> read(Set<String> keys) throws Exception; }
  static void run(String what, List<Set<String>> pages, Reader r) throws Exception {
    for (int i = 0; i < Math.min(50, pages.size()); i++) check(pages.get(i), r.read(pages.get(i)));
    long cpu0 = OS.getProcessCpuTime(), t0 = System.nanoTime();
    for (Set<String> p : pages) check(p, r.read(p));
    long cpu = OS.getProcessCpuTime() - cpu0, wall = System.nanoTime() - t0;
    System.out.printf("%-36s %6.2f ms CPU per read of %d keys, %6.2f ms wall%n", what, cpu / 1e6 / pages.size(), pages.get(0).size(), wall / 1e6 / pages.size());
  }
  static void check(Set<String> keys, Map<String, LiveNode> got) { if (got.size() != keys.size()) throw new IllegalStateException(got.size() + " of " + keys.size()); }
}
