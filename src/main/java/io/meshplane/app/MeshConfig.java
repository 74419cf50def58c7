package io.meshplane.app;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** The typed, validated configuration of one replica, built once at start (see {@link ConfigLoader}). */
public record MeshConfig(
    String httpHost,
    int httpPort,
    int httpInstances,
    List<String> trustedProxies,
    int panelPort,
    io.meshplane.panel.PanelSettings panel,
    String postgresUrl,
    int postgresPoolSize,
    int postgresReadPoolSize,
    Duration postgresReadTimeout,
    Path postgresEmbeddedDir,
    String clusterName,
    String clusterHost,
    int clusterPort,
    int clusterEventBusPort,
    List<String> clusterMembers,
    String clusterKubernetesService,
    String advertiseUrl,
    Path keysDir,
    String issuer,
    Duration tokensMaxLifetime,
    Duration heartbeatInterval,
    Duration staleAfter,
    Duration flushInterval,
    String addressPool,
    Duration pendingTtl,
    Duration operationsDeadline,
    io.meshplane.common.BoundedWork.Limits policyWork,
    io.meshplane.node.Relays relays,
    io.meshplane.watch.WatchModule.Settings watch,
    io.meshplane.meshca.MeshcaModule.Settings meshca,
    int writeBehindMaxBacklog,
    Duration shutdownGrace,
    Duration gaugeInterval) {

  public boolean embeddedPostgres() {
    return "embedded".equals(postgresUrl);
  }
}
