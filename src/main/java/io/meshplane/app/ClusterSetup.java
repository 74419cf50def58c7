package io.meshplane.app;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;

/** The Hazelcast member configuration of a replica: explicit discovery only, nothing leaves the configured network. */
final class ClusterSetup {
  private ClusterSetup() {}

  public static Config hazelcastConfig(MeshConfig config) {
    // Start from Vert.x's defaults: they carry the __vertx.* map settings the cluster manager relies on.
    Config hz = ConfigUtil.loadConfig();
    hz.setClusterName(config.clusterName());
    hz.setProperty("hazelcast.phone.home.enabled", "false");
    // Our own shutdown hook closes Vert.x, which leaves the cluster; Hazelcast's hook would race it.
    hz.setProperty("hazelcast.shutdownhook.enabled", "false");
    hz.setProperty("hazelcast.logging.type", "slf4j");

    io.meshplane.heartbeat.LiveState.configure(hz);
    // owner affinity: the other replicas name this one to agents at this URL (heartbeat.LiveOwners reads it)
    if (!config.advertiseUrl().isEmpty()) {
      hz.getMemberAttributeConfig().setAttribute(io.meshplane.heartbeat.LiveState.ADVERTISE_ATTRIBUTE, config.advertiseUrl());
    }

    NetworkConfig network = hz.getNetworkConfig();
    network.setPort(config.clusterPort()).setPortAutoIncrement(false);
    if (!config.clusterHost().isEmpty()) {
      network.getInterfaces().setEnabled(true).addInterface(config.clusterHost());
      hz.setProperty("hazelcast.socket.bind.any", "false");
      hz.setProperty("hazelcast.local.localAddress", config.clusterHost());
    }

    JoinConfig join = network.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    if (!config.clusterKubernetesService().isEmpty()) {
      join.getTcpIpConfig().setEnabled(false);
      join.getKubernetesConfig().setEnabled(true)
          .setProperty("service-dns", config.clusterKubernetesService())
          .setProperty("service-port", String.valueOf(config.clusterPort()));
    } else {
      join.getKubernetesConfig().setEnabled(false);
      join.getTcpIpConfig().setEnabled(true).getMembers().clear();
      for (String member : config.clusterMembers()) {
        join.getTcpIpConfig().addMember(member);
      }
    }
    return hz;
  }
}
