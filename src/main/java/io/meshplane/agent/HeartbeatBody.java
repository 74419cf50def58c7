package io.meshplane.agent;

import io.vertx.core.buffer.Buffer;
import java.util.List;

/**
 * The JSON a session sends: the enrollment request (API.md §8) and the heartbeat body (API.md §11),
 * written by hand into a reused {@link StringBuilder} (a simulator writes one per node and interval).
 */
final class HeartbeatBody {
  private HeartbeatBody() {}

  /** The body of {@code POST /v1/nodes}: {@code {name, public_key, tags}}. */
  static Buffer enrollment(String name, String publicKey, List<String> tags) {
    StringBuilder sb = new StringBuilder(128).append('{');
    JsonText.key(sb, "name");
    JsonText.string(sb, name).append(',');
    JsonText.key(sb, "public_key");
    JsonText.string(sb, publicKey).append(',');
    JsonText.key(sb, "tags").append('[');
    for (int i = 0; i < tags.size(); i++) {
      if (i > 0) sb.append(',');
      JsonText.string(sb, tags.get(i));
    }
    return Buffer.buffer(sb.append("]}").toString());
  }

  /**
   * The heartbeat body of {@code s}, written into {@code sb} (cleared first). Members the node does not
   * hold are left out: no relay before one is assigned, no ingress or services before the first answer,
   * {@code known} only with the versions held.
   */
  static Buffer heartbeat(StringBuilder sb, AgentSession s, long nowMs) {
    sb.setLength(0);
    sb.append('{');
    JsonText.key(sb, "public_key");
    JsonText.string(sb, s.publicKey());
    if (s.relay() != null) {
      JsonText.key(sb.append(','), "relay");
      JsonText.string(sb, s.relay());
    }
    NodeAssignments assigned = s.assignments();
    String[] services = assigned.serviceNames();
    if (services != null) {
      JsonText.key(sb.append(','), "services").append('[');
      for (int i = 0; i < services.length; i++) {
        if (i > 0) sb.append(',');
        JsonText.string(sb, services[i]);
      }
      sb.append(']');
    }
    String[] ingress = assigned.ingressNames();
    if (ingress != null) {
      JsonText.key(sb.append(','), "ingress").append('[');
      for (int i = 0; i < ingress.length; i++) {
        if (i > 0) sb.append(',');
        JsonText.key(sb.append('{'), "name");
        JsonText.string(sb, ingress[i]).append(',');
        JsonText.key(sb, "state").append('"').append(assigned.ingressState(i)).append("\"}");
      }
      sb.append(']');
    }
    JsonText.key(sb.append(','), "telemetry").append('{');
    JsonText.key(sb, "agent_version").append('"').append(AgentSession.AGENT_VERSION).append("\",");
    JsonText.key(sb, "uptime_s").append(Math.max(0, (nowMs - s.startedAtMs()) / 1000)).append(',');
    JsonText.key(sb, "peers").append(s.peerCount());
    if (s.simulated()) JsonText.key(sb.append(','), "simulated").append("true");
    sb.append('}');
    CommandLedger.Result[] reporting = s.reporting();
    if (reporting.length > 0) {
      JsonText.key(sb.append(','), "command_results").append('[');
      for (int i = 0; i < reporting.length; i++) {
        CommandLedger.Result r = reporting[i];
        if (i > 0) sb.append(',');
        JsonText.key(sb.append('{'), "id");
        JsonText.string(sb, r.id()).append(',');
        JsonText.key(sb, "status");
        JsonText.string(sb, r.status());
        if (r.detail() != null) {
          JsonText.key(sb.append(','), "detail");
          JsonText.string(sb, r.detail());
        }
        sb.append('}');
      }
      sb.append(']');
    }
    AgentPki pki = s.pki();
    if (pki != null) pki.write(sb, nowMs, s.publicKey());
    PeerBook peers = s.peers();
    long aclVersion = s.aclVersion();
    if (peers != null || aclVersion >= 0) {
      JsonText.key(sb.append(','), "known").append('{');
      if (peers != null) JsonText.key(sb, "peers").append(peers.version());
      if (aclVersion >= 0) {
        if (peers != null) sb.append(',');
        JsonText.key(sb, "acl").append(aclVersion);
      }
      sb.append('}');
    }
    if (s.edge() != null) s.edge().writeReport(sb);
    return Buffer.buffer(sb.append('}').toString());
  }
}
