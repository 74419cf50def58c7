package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * The reference agent applies the revocations part of an answer: the whole list ({@code items})
 * replaces what it holds, a delta ({@code added}) adds to it, an answer of an older version is ignored,
 * and an expired entry leaves the list by its {@code not_after}, whichever way it came.
 */
class AgentRevocationDeltaTest {
  static JsonObject entry(String serial, String spki, Instant notAfter) {
    return new JsonObject().put("serial", serial).put("spki_sha256", spki).put("not_after", notAfter.toString());
  }

  static JsonObject part(long version, String member, JsonObject... entries) {
    return new JsonObject().put("revocations", new JsonObject().put("version", version).put(member, new JsonArray(java.util.List.of(entries))));
  }

  @Test
  void aDeltaAddsToTheListHeldAndTheWholeListReplacesIt() {
    long now = System.currentTimeMillis();
    Instant later = Instant.ofEpochMilli(now).plus(Duration.ofHours(1));
    AgentPki p = new AgentPki();
    assertTrue(p.apply(part(5, "items", entry("a5", "k5", later)), now).revocations());
    assertTrue(p.revoked("a5", null));

    // a delta from 5 to 8: added to what is held
    assertTrue(p.apply(part(8, "added", entry("b8", "k8", later)), now).revocations());
    assertEquals(8, p.revocationsVersion());
    assertTrue(p.revoked("a5", null) && p.revoked("b8", null) && p.revoked(null, "k8"));
    assertEquals(2, p.info(now).getInteger("revoked"));

    // an answer of an older version (another replica behind) changes nothing
    assertFalse(p.apply(part(7, "items"), now).revocations());
    assertTrue(p.revoked("b8", null));

    // the whole list replaces it
    assertTrue(p.apply(part(9, "items", entry("c9", "k9", later)), now).revocations());
    assertFalse(p.revoked("a5", null) || p.revoked("b8", null));
    assertTrue(p.revoked("c9", "k9"));
  }

  @Test
  void anExpiredEntryLeavesTheListHoweverItCame() {
    long now = System.currentTimeMillis();
    Instant soon = Instant.ofEpochMilli(now).plusSeconds(10);
    Instant later = Instant.ofEpochMilli(now).plus(Duration.ofHours(1));
    AgentPki p = new AgentPki();
    p.apply(part(3, "items", entry("a3", "k3", soon)), now);
    p.apply(part(4, "added", entry("b4", "k4", soon), entry("c4", "kc", later)), now);
    assertEquals(3, p.info(now).getInteger("revoked"));
    // past a3's and b4's not_after: the next answer (unchanged) drops them, the delta's own included
    p.apply(new JsonObject().put("revocations", new JsonObject().put("version", 4).put("unchanged", true)), now + 20_000);
    assertEquals(1, p.info(now + 20_000).getInteger("revoked"));
    assertFalse(p.revoked("a3", null) || p.revoked("b4", "k4"));
    assertTrue(p.revoked("c4", null));
    // and the state file keeps what is left, at its version
    JsonObject saved = p.toJson().getJsonObject("revocations");
    assertEquals(4, saved.getLong("version"));
    assertEquals(1, saved.getJsonArray("items").size());
  }
}
