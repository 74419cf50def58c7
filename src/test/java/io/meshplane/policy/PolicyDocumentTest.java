package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The policy document and its versions as API users lean on them: optimistic locking under
 * concurrency, history and rollback, hostile documents, and versions that never go backwards while
 * replicas are alternated during concurrent changes.
 */
@Timeout(300)
class PolicyDocumentTest extends PolicyCluster {

  @Test
  void concurrentPutsWithTheSameIfMatchLetExactlyOneWin() {
    JsonObject p = new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "icmp")));
    assertEquals(200, put(a, "race", p, null).statusCode());
    List<Future<HttpResponse<Buffer>>> calls = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      JsonObject body = new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/" + (1000 + i))));
      var req = http.request(HttpMethod.PUT, (i % 2 == 0 ? a : b).coordinatorPort(), acl("race", "prod")).bearerTokenAuthentication(admin)
          .putHeader("Content-Type", "application/json").putHeader("If-Match", "\"1\"");
      calls.add(req.sendBuffer(Buffer.buffer(body.encode())));
    }
    int ok = 0;
    int conflict = 0;
    int limited = 0;
    for (Future<HttpResponse<Buffer>> f : calls) {
      HttpResponse<Buffer> r = Http.await(f, 30);
      if (r.statusCode() == 200) ok++;
      if (r.statusCode() == 409) {
        conflict++;
        assertEquals("conflict", r.bodyAsJsonObject().getString("code"));
      }
      if (r.statusCode() == 429 || r.statusCode() == 503) {
        // one caller's evaluations are bounded (policy.max_per_caller): the rest are told when to retry
        limited++;
        assertTrue(Integer.parseInt(r.getHeader("Retry-After")) > 0, r.bodyAsString());
      }
    }
    assertEquals(1, ok, "exactly one PUT with If-Match: 1 wins");
    assertEquals(7, conflict + limited, "every other PUT lost the race or was told to retry");
    assertEquals(2, http.get(a.coordinatorPort(), acl("race", "prod"), admin).bodyAsJsonObject().getLong("version"));
  }

  @Test
  void historyListsEveryVersionAndARollbackIsANewAuditedVersion() {
    JsonObject v1 = new JsonObject().put("grants", new JsonArray().add(grant("tag:a", "tag:b", "tcp/1")));
    JsonObject v2 = new JsonObject().put("grants", new JsonArray().add(grant("tag:a", "tag:b", "tcp/2")));
    assertEquals(200, put(a, "history", v1, "0").statusCode());
    assertEquals(200, put(a, "history", v2, "1").statusCode());
    HttpResponse<Buffer> r = http.send(http.request(HttpMethod.POST, b.coordinatorPort(), "/v1/acl/versions/1/restore?team=history&environment=prod")
        .bearerTokenAuthentication(admin).putHeader("If-Match", "2"));
    assertEquals(200, r.statusCode(), r.bodyAsString());
    assertEquals(3, r.bodyAsJsonObject().getLong("version"));
    assertEquals(1, r.bodyAsJsonObject().getLong("restored_from"));
    assertEquals(v1.getJsonArray("grants"), r.bodyAsJsonObject().getJsonArray("grants"));
    JsonObject page = http.get(a.coordinatorPort(), "/v1/acl/versions?team=history&environment=prod&limit=2", admin).bodyAsJsonObject();
    assertEquals(List.of(1L, 2L), page.getJsonArray("items").stream().map(o -> ((JsonObject) o).getLong("version")).toList());
    assertNotNull(page.getJsonArray("items").getJsonObject(0).getJsonObject("created_by").getString("id"));
    JsonObject next = http.get(a.coordinatorPort(), "/v1/acl/versions?team=history&environment=prod&limit=2&cursor="
        + page.getString("next_cursor"), admin).bodyAsJsonObject();
    assertEquals(3L, next.getJsonArray("items").getJsonObject(0).getLong("version"));
    assertEquals(2L, http.get(a.coordinatorPort(), "/v1/acl/versions/2?team=history&environment=prod", admin).bodyAsJsonObject()
        .getLong("version"));
    assertEquals(404, http.get(a.coordinatorPort(), "/v1/acl/versions/9?team=history&environment=prod", admin).statusCode());
    // the trail names the rollback with its versions
    JsonObject audit = http.get(a.coordinatorPort(), "/v1/audit?action=acl.rollback", admin).bodyAsJsonObject();
    JsonObject ev = audit.getJsonArray("items").getJsonObject(0);
    assertEquals(new JsonObject().put("old_version", 2).put("new_version", 3).put("restored_from", 1), ev.getJsonObject("details"));
    JsonObject update = http.get(a.coordinatorPort(), "/v1/audit?action=acl.update", admin).bodyAsJsonObject();
    assertTrue(update.getJsonArray("items").stream().anyMatch(o -> new JsonObject().put("old_version", 1).put("new_version", 2)
        .equals(((JsonObject) o).getJsonObject("details"))), update.encode());
  }

  @Test
  void hostilePolicyDocumentsAreRefusedNamingTheFieldAndNothingIsStored() {
    Map<String, JsonObject> cases = new java.util.LinkedHashMap<>();
    cases.put("/grants", new JsonObject());
    cases.put("/grants/0", new JsonObject().put("grants", new JsonArray().add("tag:a")));
    cases.put("/grants/0/src", new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("dst", new JsonArray().add("*"))
        .put("ports", new JsonArray().add("*")))));
    cases.put("/grants/0/src/0", new JsonObject().put("grants", new JsonArray().add(grant("group:eng", "*", "*"))));
    cases.put("/grants/0/dst/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "tag:Web", "*"))));
    cases.put("/grants/0/ports/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/70000"))));
    cases.put("/grants/0/ports/0 ", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "tcp/9-1"))));
    cases.put("/grants/0/ports/0  ", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "sctp/9"))));
    cases.put("/grants/0/src/0 ", new JsonObject().put("grants", new JsonArray().add(grant("10.1.2.3/8", "*", "*"))));
    // prefix lengths in ASCII digits only: fullwidth and Arabic-Indic digits are not /8
    cases.put("/grants/0/dst/0 ", new JsonObject().put("grants", new JsonArray().add(grant("*", "10.0.0.0/\uFF18", "*"))));
    cases.put("/grants/0/dst/0  ", new JsonObject().put("grants", new JsonArray().add(grant("*", "10.0.0.0/\u0668", "*"))));
    cases.put("/grants/1/ports/0", new JsonObject().put("grants", new JsonArray().add(grant("*", "*", "*")).add(grant("*", "*", "tcp/08"))));
    cases.put("/tests/0/accept/0", new JsonObject().put("grants", new JsonArray()).put("tests", new JsonArray()
        .add(new JsonObject().put("src", "a").put("accept", new JsonArray().add("b:tcp/1-2")))));
    JsonArray many = new JsonArray();
    for (int i = 0; i < 600; i++) many.add(grant("*", "*", "*"));
    cases.put("/grants  ", new JsonObject().put("grants", many));
    for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
      HttpResponse<Buffer> r = put(a, "hostile", c.getValue(), null);
      assertEquals(400, r.statusCode(), c.getKey() + ": " + r.bodyAsString());
      assertEquals(c.getKey().trim(), r.bodyAsJsonObject().getJsonArray("errors").getJsonObject(0).getString("field"), r.bodyAsString());
    }
    // 10,000 grants: over the body limit before any parsing
    JsonArray huge = new JsonArray();
    for (int i = 0; i < 10_000; i++) huge.add(grant("*", "*", "*"));
    assertEquals(413, put(a, "hostile", new JsonObject().put("grants", huge), null).statusCode());
    // deep nesting
    String deep = "{\"grants\":" + "[".repeat(5000) + "]".repeat(5000) + "}";
    HttpResponse<Buffer> r = http.sendRaw(HttpMethod.PUT, a.coordinatorPort(), acl("hostile", "prod"), "application/json",
        Buffer.buffer(deep), admin);
    assertEquals(400, r.statusCode(), r.bodyAsString());
    // a bad If-Match
    assertEquals(400, put(a, "hostile", new JsonObject().put("grants", new JsonArray()), "W/\"1\"").statusCode());
    assertEquals(0, http.get(a.coordinatorPort(), acl("hostile", "prod"), admin).bodyAsJsonObject().getLong("version"), "nothing stored");
    // another team's policy does not exist for a token scoped elsewhere
    String other = io.meshplane.testing.Tokens.issue(a, "hostile", "prod", io.meshplane.access.Surface.ADMIN).jwt();
    assertEquals(404, http.get(a.coordinatorPort(), acl("tests", "prod"), other).statusCode());
  }

  @Test
  void versionsNeverGoBackwardsAndNameOneContentAcrossReplicasDuringConcurrentChanges() throws Exception {
    List<Nodes.Enrolled> agents = new ArrayList<>();
    for (int i = 0; i < 6; i++) agents.add(enroll("c-" + i, "concurrent", i % 2 == 0 ? "tag:x" : "tag:y"));
    AtomicBoolean stop = new AtomicBoolean();
    Thread changer = new Thread(() -> {
      for (int i = 0; !stop.get() && i < 40; i++) {
        JsonObject p = new JsonObject().put("grants", new JsonArray().add(grant(i % 2 == 0 ? "tag:x" : "*", "tag:y", "tcp/" + (100 + i))));
        put(i % 2 == 0 ? a : b, "concurrent", p, null);
      }
    });
    changer.start();
    Map<String, long[]> held = new HashMap<>();
    Map<String, String> rulesByVersion = new HashMap<>();
    Map<String, String> fullByVersion = new HashMap<>();
    try {
      for (int round = 0; round < 60; round++) {
        for (int i = 0; i < agents.size(); i++) {
          Nodes.Enrolled n = agents.get(i);
          long[] v = held.computeIfAbsent(n.id(), k -> new long[] {0, 0});
          // every other beat asks for the full set, so full answers under one version can be compared
          long knownPeers = round % 2 == 0 ? 0 : v[0];
          JsonObject answer = beat((round + i) % 2 == 0 ? a : b, n, knownPeers, v[1]);
          JsonObject peers = answer.getJsonObject("peers");
          JsonObject aclBlock = answer.getJsonObject("acl");
          // an agent that says it holds nothing (known 0) may be given any version; one that names its version never an older one
          if (knownPeers > 0) {
            assertTrue(peers.getLong("version") >= v[0], n.name() + " peers went backwards: " + v[0] + " -> " + peers.encode());
          }
          assertTrue(aclBlock.getLong("version") >= v[1], n.name() + " acl went backwards: " + v[1] + " -> " + aclBlock.encode());
          v[0] = peers.getLong("version");
          v[1] = aclBlock.getLong("version");
          if (peers.containsKey("items")) {
            List<String> ids = new ArrayList<>();
            for (Object o : peers.getJsonArray("items")) ids.add(((JsonObject) o).getString("id"));
            java.util.Collections.sort(ids);
            String previous = fullByVersion.putIfAbsent(n.id() + "@" + peers.getLong("version"), ids.toString());
            if (previous != null) assertEquals(previous, ids.toString(), n.name() + ": one version, one peer set, on both replicas");
          }
          if (aclBlock.containsKey("rules")) {
            String previous = rulesByVersion.putIfAbsent(n.id() + "@" + aclBlock.getLong("version"), aclBlock.getJsonArray("rules").encode());
            if (previous != null) assertEquals(previous, aclBlock.getJsonArray("rules").encode(), n.name() + ": one version, one rule set");
          }
        }
      }
    } finally {
      stop.set(true);
      changer.join();
    }
    assertTrue(fullByVersion.size() > 6, "the test saw several versions: " + fullByVersion.size());
  }
}
