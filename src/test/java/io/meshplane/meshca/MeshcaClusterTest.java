package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.ConfigException;
import io.meshplane.app.Meshplane;
import io.meshplane.audit.Actor;
import io.meshplane.common.Ids;
import io.meshplane.common.RequestInfo;
import io.meshplane.testing.TestCluster;
import io.vertx.core.Future;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * MeshCA across replicas on one PostgreSQL: two replicas starting at once create one hierarchy (the
 * advisory lock) and serve the same bundle; the signing budget is shared by the cluster and defers what
 * is over it; a replica with another secret does not start, and says which setting is wrong.
 */
@Timeout(240)
class MeshcaClusterTest {
  static final String SECRET = "the cluster's MeshCA secret, long enough for HKDF";

  @Test
  void twoReplicasStartingAtOnceCreateOneHierarchyAndShareTheBudget() throws Exception {
    Map<String, String> settings = Map.of("meshca.secret", SECRET, "meshca.max_signatures_per_s", "1");
    try (TestCluster cluster = TestCluster.of(3)) {
      // both replicas' second phases (PostgreSQL, migrations, the modules' loads) run at the same time
      Meshplane r0 = cluster.launch(0, cluster.db().url(), settings);
      Meshplane r1 = cluster.launch(1, cluster.db().url(), settings);
      r0.started().toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
      r1.started().toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
      try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT kind, state, count(*) FROM meshca_authorities GROUP BY kind, state ORDER BY kind")) {
        List<String> rows = new ArrayList<>();
        while (rs.next()) rows.add(rs.getString(1) + " " + rs.getString(2) + " " + rs.getInt(3));
        assertEquals(List.of("intermediate active 1", "root active 1"), rows);
      }
      assertEquals(r0.meshca().bundlePem(), r1.meshca().bundlePem());
      assertEquals(r0.meshca().bundleVersion(), r1.meshca().bundleVersion());
      assertTrue(r0.meshca().bundlePem().startsWith("-----BEGIN CERTIFICATE-----"));

      // 1 signature per second for the whole cluster: of six CSRs sent at once to both replicas, one is signed
      // (two if the refill lands in between), the others are deferred with a retry
      List<Future<MeshcaModule.Issuance>> sent = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Meshplane r = i % 2 == 0 ? r0 : r1;
        String id = Ids.next("nd");
        byte[] wg = new byte[32];
        wg[1] = (byte) i;
        MeshcaModule.NodeIdentity node = new MeshcaModule.NodeIdentity(id, "team-a", "prod", "100.64.1." + (i + 1),
            Base64.getEncoder().encodeToString(wg));
        sent.add(r.meshca().issue(new Actor("node", id, "test"), RequestInfo.NONE, node, TestCsrs.csr(TestCsrs.pair("EC"))));
      }
      int issued = 0;
      int deferred = 0;
      for (Future<MeshcaModule.Issuance> f : sent) {
        MeshcaModule.Issuance out = f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        if (out instanceof MeshcaModule.Issuance.Deferred d) {
          deferred++;
          assertTrue(d.retryAfterSeconds() >= 1, "a retry is named");
        } else {
          issued++;
        }
      }
      assertTrue(issued >= 1 && issued <= 2, issued + " issued");
      assertEquals(6 - issued, deferred);
      // each replica counts what it signed and what it deferred
      double signedCount = 0;
      double deferredCount = 0;
      for (Meshplane r : List.of(r0, r1)) {
        signedCount += io.meshplane.testing.Metrics.value(cluster.http(), r.coordinatorPort(), "mesh_meshca_certificates_issued_total");
        deferredCount += io.meshplane.testing.Metrics.value(cluster.http(), r.coordinatorPort(), "mesh_meshca_signatures_deferred_total");
      }
      assertEquals(issued, (int) signedCount);
      assertEquals(deferred, (int) deferredCount);

      // the advisory lock, deterministically: the hierarchy removed, four loads at once create exactly one
      try (Connection c = cluster.db().connect(); Statement st = c.createStatement()) {
        st.executeUpdate("DELETE FROM meshca_certificates");
        st.executeUpdate("DELETE FROM meshca_authorities WHERE kind = 'intermediate'");
        st.executeUpdate("DELETE FROM meshca_authorities");
      }
      List<CompletableFuture<String>> loads = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        loads.add(CompletableFuture.supplyAsync(() -> {
          Authorities mine = new Authorities(r0.pool(), java.time.Duration.ofDays(3650), java.time.Duration.ofDays(90));
          mine.load(new KeyVault(SECRET.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
          return mine.current().intermediate().id();
        }));
      }
      java.util.Set<String> intermediates = new java.util.HashSet<>();
      for (CompletableFuture<String> f : loads) intermediates.add(f.get(60, TimeUnit.SECONDS));
      assertEquals(1, intermediates.size(), "every load holds the one intermediate: " + intermediates);
      try (Connection c = cluster.db().connect(); Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT count(*) FROM meshca_authorities")) {
        rs.next();
        assertEquals(2, rs.getInt(1), "one root and one intermediate");
      }

      // a third replica with another secret stops at start, naming the setting
      RuntimeException e = assertThrows(RuntimeException.class, () -> cluster.start(2,
          Map.of("meshca.secret", "not the cluster's secret, but long enough too")));
      Throwable t = e;
      while (t != null && !(t instanceof ConfigException)) t = t.getCause();
      ConfigException refused = assertInstanceOf(ConfigException.class, t, String.valueOf(e));
      assertTrue(refused.getMessage().startsWith("meshca.secret"), refused.getMessage());
      assertTrue(refused.getStackTrace().length == 0 || !refused.getMessage().contains("Exception"), refused.getMessage());
    }
  }
}
