package io.meshplane.ingress;

import io.meshplane.waf.Waf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

/**
 * A team+environment's traffic policy as its ingress nodes are sent it (API.md §20, "Distribution"):
 * the latest version of the policy ({@code version}, what a node acknowledges), the one enforced (the
 * latest {@code enforce} version) and, when a later version is in {@code shadow} mode, that one too,
 * evaluated beside it and blocking nothing. Each carries its probe nonce ({@link Waf#probeNonce}).
 * Immutable; encoded once when it changes, appended to every full {@code ingress_routes} answer.
 *
 * <pre>
 * "waf": {"version": "7",
 *         "enforce": {"version": 5, "probe": "…", "policy": {…}},
 *         "shadow":  {"version": 7, "probe": "…", "policy": {…}}}
 * </pre>
 */
record IngressWaf(long version, JsonObject enforce, JsonObject shadow, Buffer json) {
  /** {@code previous} (null: none) after the {@code waf} change-log entry {@code entry} ({@code team, environment, version, mode, policy}). */
  static IngressWaf of(IngressWaf previous, JsonObject entry) {
    long version = entry.getLong("version");
    JsonObject part = new JsonObject().put("version", version)
        .put("probe", Waf.probeNonce(entry.getString("team"), entry.getString("environment"), version)).put("policy", entry.getJsonObject("policy"));
    boolean shadow = "shadow".equals(entry.getString("mode"));
    JsonObject enforce = shadow ? previous == null ? null : previous.enforce() : part;
    JsonObject shadowed = shadow ? part : null;
    Buffer json = new JsonObject().put("version", Long.toString(version)).put("enforce", enforce).put("shadow", shadowed).toBuffer();
    return new IngressWaf(version, enforce, shadowed, json);
  }

  /** The enforced version (0: none, only a shadow one). */
  long enforced() {
    return enforce == null ? 0 : enforce.getLong("version");
  }

  /** The shadow version (0: none). */
  long shadowed() {
    return shadow == null ? 0 : shadow.getLong("version");
  }
}
