package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.PanelSession;
import io.meshplane.testing.TestCluster;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A replica that dies abruptly logs nobody out: sessions in use, older than the idle timeout, whose
 * primary copies were on the dead member, are served from their backups with the same deadline.
 */
@Timeout(180)
class PanelFailoverTest {
  @Test
  void sessionsInUseSurviveTheCrashOfTheReplicaHoldingThem() throws InterruptedException {
    try (TestCluster cluster = TestCluster.started(2, Map.of("panel.session_idle", "8s", "panel.session_lifetime", "10m",
        "panel.login_per_address", "1000"))) {
      Meshplane a = cluster.replica(0);
      Meshplane b = cluster.replica(1);
      Http http = cluster.http();
      PanelSession.user(a, "root", "admin", "*", "*");
      List<PanelSession> sessions = new ArrayList<>();
      for (int i = 0; i < 12; i++) sessions.add(PanelSession.signIn(http, (i % 2 == 0 ? a : b).panelPort(), "root"));
      // in use for longer than the idle timeout: each is written again along the way
      // (the idle timeout is long enough that one round of 12 requests on a loaded machine stays well inside it)
      long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(12);
      while (System.nanoTime() < until) {
        for (PanelSession s : sessions) assertEquals(200, s.get(a.panelPort(), "/api/v1/session").statusCode());
        Thread.sleep(1000); // not synchronisation: the sessions are in use for longer (12 s) than their idle timeout (8 s)
      }
      int held = b.hazelcast().getMap(Sessions.MAP).localKeySet().size();
      // abrupt: no migration, no goodbye
      b.hazelcast().getLifecycleService().terminate();
      List<Integer> statuses = new ArrayList<>();
      for (PanelSession s : sessions) statuses.add(s.get(a.panelPort(), "/api/v1/session").statusCode());
      assertEquals(java.util.Collections.nCopies(sessions.size(), 200), statuses,
          "every session answered after the crash (" + held + " had their primary on the dead member)");
    }
  }
}
