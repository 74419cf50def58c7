package io.meshplane.wafpolicy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The reported samples gathered newest first, within a second too (a node reports its own oldest first), and bounded. */
class WafSamplesTest {
  static JsonObject sample(long at, String rule) {
    return new JsonObject().put("at", at).put("rule", rule).put("request", new JsonObject().put("method", "GET").put("target", "/" + rule)
        .put("headers", new JsonArray().add(new JsonArray().add("user-agent").add("x"))));
  }

  @Test
  void newestFirstWithinOneSecondAndAtMostOneHundred() {
    Map<String, String> reports = new LinkedHashMap<>();
    reports.put("nd_a", new JsonArray().add(sample(100, "a1")).add(sample(200, "a2")).add(sample(200, "a3")).encode());
    reports.put("nd_b", new JsonArray().add(sample(150, "b1")).encode());
    reports.put("nd_c", "");
    JsonArray out = WafSamples.newestFirst(reports);
    assertEquals(List.of("a3", "a2", "b1", "a1"), out.stream().map(o -> ((JsonObject) o).getString("rule")).toList());
    assertEquals("nd_b", out.getJsonObject(2).getString("node"));
    JsonArray many = new JsonArray();
    for (int i = 0; i < 5; i++) many.add(sample(i, "r" + i));
    Map<String, String> fleet = new LinkedHashMap<>();
    for (int n = 0; n < 30; n++) fleet.put("nd_" + n, many.encode());
    assertEquals(WafSamples.MAX, WafSamples.newestFirst(fleet).size());
    // as a preview's requests: headers as name -> values
    JsonArray requests = new JsonArray(WafSamples.asRequests(out));
    assertEquals(new JsonArray().add("x"), requests.getJsonObject(0).getJsonObject("headers").getJsonArray("user-agent"));
  }
}
