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
  /** The traffic policy applied: its version, enforced and shadow versions (null: none). */
  private String wafVersion;
  private Long wafEnforce;
  private Long wafShadow;
  /** Policies compiled once per simulator (every simulated edge of a team gets the same document), by their parts' probe nonces. */
  private static final java.util.Map<String, Boolean> COMPILED = new java.util.concurrent.ConcurrentHashMap<>();

  SimEdge(SimStats stats) {
    this.stats = stats;
  }

  @Override
  public void apply(Object routes, Object ingress, boolean drainedBySelf) {
    if (routes instanceof JsonObject b && b.getValue("routes") instanceof JsonArray && b.getValue("version") instanceof String v && !v.equals(version)) {
      stats.ingressApplied(version, v, System.currentTimeMillis());
      version = v;
      applyWaf(b.getValue("waf"));
    }
  }

  /**
   * The block's traffic policy, compiled as a real edge does (by the same {@code Waf.compile}) but once
   * per simulator for all its nodes: the first node to see a version pays its compile on its shard's
   * thread (tens of milliseconds, once per version), the others find it done.
   */
  private void applyWaf(Object block) {
    if (!(block instanceof JsonObject w)) {
      wafVersion = null;
      wafEnforce = null;
      wafShadow = null;
      return;
    }
    JsonObject e = w.getJsonObject("enforce");
    JsonObject s = w.getJsonObject("shadow");
    String key = (e == null ? "" : e.getString("probe")) + "/" + (s == null ? "" : s.getString("probe"));
    if (COMPILED.size() > 64 && !COMPILED.containsKey(key)) COMPILED.clear(); // bounded: only the versions of the run's last changes
    COMPILED.computeIfAbsent(key, k -> {
      if (e != null) io.meshplane.waf.Waf.compile(e.getJsonObject("policy").encode());
      if (s != null) io.meshplane.waf.Waf.compile(s.getJsonObject("policy").encode());
      return Boolean.TRUE;
    });
    wafVersion = w.getString("version");
    wafEnforce = e == null ? null : e.getLong("version");
    wafShadow = s == null ? null : s.getLong("version");
  }

  @Override
  public void writeReport(StringBuilder sb) {
    if (version == null) return;
    JsonText.key(sb.append(','), "ingress_routes").append('{');
    JsonText.key(sb, "version");
    JsonText.string(sb, version);
    if (wafVersion != null) {
      sb.append(",\"waf\":").append(new JsonObject().put("version", wafVersion).put("enforce", wafEnforce).put("shadow", wafShadow).encode());
    }
    sb.append('}');
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
