package io.meshplane.heartbeat;

import com.hazelcast.map.IMap;
import io.meshplane.common.Blocking;
import java.time.Duration;
import java.util.List;

/**
 * After a cold start of the whole cluster the live map is empty. The member that started the cluster
 * loads every node's last flushed heartbeat from PostgreSQL (clean, not dirty), so a node that died
 * during the outage is still declared stale once the start grace has passed. {@code putIfAbsent}: a
 * heartbeat that arrived meanwhile is newer and wins.
 */
final class LiveSeed {
  private static final int PAGE = 5000;

  private LiveSeed() {}

  /** Blocking; run off the event loop. Returns how many entries were added. */
  public static int seed(LiveState live, LiveRepository nodes) {
    IMap<String, LiveNode> map = live.map();
    String after = "";
    int added = 0;
    while (true) {
      List<LiveRepository.Stored> page = Blocking.await(nodes.withHeartbeat(after, PAGE), Duration.ofMinutes(1), "reading nodes to seed");
      for (LiveRepository.Stored r : page) {
        // the acknowledged versions too, so policy_sync does not read "none sent" until the next heartbeat
        LiveNode n = new LiveNode(r.heartbeatAt().toEpochMilli(), false, r.endpoints(), r.reportedKey(),
            r.reportedRelay(), r.routes(), r.telemetry(), r.acknowledgedPeers(), r.acknowledgedAcl(), new String[0]);
        if (map.putIfAbsent(r.id(), n) == null) added++;
      }
      if (page.size() < PAGE) return added;
      after = page.get(page.size() - 1).id();
    }
  }
}
