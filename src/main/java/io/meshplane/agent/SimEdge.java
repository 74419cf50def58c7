package io.meshplane.agent;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * The ingress edge of a simulated node that carries {@code --ingress-tag}: no listener and no proxy,
 * only what the coordinator sees of an edge. It applies the routes version an answer (heartbeat or
 * stream) carries, reports it in the next heartbeat ({@code "ingress_routes":{"version":V}}, which is
 * what makes the node's {@code ingress_sync} current and its watch path carry {@code &ingress=V}), and
 * answers a {@code drain_ingress} at once as drained with empty evidence. One string per node.
 */
final class SimEdge implements AgentSession.Edge {
  private final SimStats stats;
  private String version;

  SimEdge(SimStats stats) {
    this.stats = stats;
  }

  @Override
  public void apply(Object routes, Object ingress, boolean drainedBySelf) {
    if (routes instanceof JsonObject b && b.getValue("routes") instanceof JsonArray && b.getValue("version") instanceof String v && !v.equals(version)) {
      stats.ingressApplied(version, v, System.currentTimeMillis());
      version = v;
    }
  }

  @Override
  public void writeReport(StringBuilder sb) {
    if (version == null) return;
    JsonText.key(sb.append(','), "ingress_routes").append('{');
    JsonText.key(sb, "version");
    JsonText.string(sb, version).append('}');
  }

  @Override
  public CommandLedger.Result drain(String opId, String kind, JsonObject command) {
    return new CommandLedger.Result(opId, kind, "succeeded", "drained with evidence {\"open_connections\":0,\"requests_during_drain\":0}");
  }

  @Override
  public String routesVersion() {
    return version;
  }
}
