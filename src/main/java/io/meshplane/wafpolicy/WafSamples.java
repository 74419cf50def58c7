package io.meshplane.wafpolicy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The samples of denied requests that ingress nodes report (each node its last five, redacted at the
 * edge and bounded again by the heartbeat's parser): gathered newest first, and turned into a preview's
 * sample requests.
 */
final class WafSamples {
  /** The most samples an answer carries (and a preview evaluates). */
  static final int MAX = WafPolicyService.MAX_SAMPLES;
  /** The most ingress nodes whose reports are read for one answer. */
  static final int NODES = 500;

  private WafSamples() {}

  /** Every sample of {@code reports} (node id → its reported samples, a JSON list), with its node, newest first, at most {@link #MAX}. */
  static JsonArray newestFirst(Map<String, String> reports) {
    List<JsonObject> all = new ArrayList<>();
    Map<JsonObject, Integer> position = new java.util.IdentityHashMap<>();
    reports.forEach((node, report) -> {
      if (report == null || report.isEmpty()) return;
      JsonArray samples = new JsonArray(report);
      for (int i = 0; i < samples.size(); i++) {
        JsonObject s = samples.getJsonObject(i).copy().put("node", node);
        position.put(s, i);
        all.add(s);
      }
    });
    // a node reports its samples oldest first, with whole seconds: within one second, its later ones are the newer
    all.sort(Comparator.comparingLong((JsonObject s) -> s.getLong("at", 0L)).reversed().thenComparing(s -> s.getString("node"))
        .thenComparing(Comparator.comparingInt((JsonObject s) -> position.get(s)).reversed()));
    return new JsonArray(new ArrayList<>(all.subList(0, Math.min(all.size(), MAX))));
  }

  /**
   * The samples as a preview's requests ({@code method, target, headers, client_ip, body, route}); one
   * whose target a request cannot carry (not printable ASCII) is left out.
   */
  static String asRequests(JsonArray samples) {
    JsonArray out = new JsonArray();
    for (Object o : samples) {
      JsonObject s = (JsonObject) o;
      JsonObject r = s.getJsonObject("request", new JsonObject());
      String target = r.getString("target");
      if (target == null || !target.startsWith("/") || target.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) continue;
      JsonObject headers = new JsonObject();
      for (Object h : r.getJsonArray("headers", new JsonArray())) {
        JsonArray pair = (JsonArray) h;
        JsonArray values = headers.getJsonArray(pair.getString(0));
        if (values == null) headers.put(pair.getString(0), values = new JsonArray());
        values.add(pair.getString(1));
      }
      JsonObject req = new JsonObject().put("method", r.getString("method", "GET").toUpperCase(java.util.Locale.ROOT)).put("target", target)
          .put("headers", headers).put("route", s.getString("route"));
      if (r.getString("client_ip") != null && !r.getString("client_ip").isEmpty()) req.put("client_ip", r.getString("client_ip"));
      if (r.getString("body") != null) req.put("body", r.getString("body"));
      out.add(req);
    }
    return out.encode();
  }
}
