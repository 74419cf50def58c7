package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.node.NodeCertificates;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The revocations part of a heartbeat answer ({@link HeartbeatPki#revocations}): a delta ({@code added})
 * for a node whose version lies between the version this replica loaded its list at and the current one,
 * the whole list ({@code items}) for any other, each encoded once and the same bytes reused.
 */
class RevocationDeltasTest {
  static final Instant LATER = Instant.now().plus(Duration.ofHours(1));

  static Revocations.Revoked revoked(String serial, long seq) {
    return new Revocations.Revoked(serial, "ab".repeat(32), Instant.now(), "keyCompromise", LATER, seq);
  }

  /** Loaded at version 6 (holding 5 from before), then 8 and 10 applied. */
  static final Revocations.State STATE = new Revocations.State(10, List.of(revoked("a5", 5), revoked("b8", 8), revoked("c10", 10)), 6);

  static HeartbeatPki pki() {
    return new HeartbeatPki(null, null, () -> null, null, Duration.ofDays(7), NodeCertificates.NONE);
  }

  static List<String> serials(Buffer b, String member) {
    List<String> out = new ArrayList<>();
    JsonObject j = new JsonObject(b);
    assertEquals(10, j.getLong("version"));
    assertTrue(j.containsKey(member), j.encode());
    for (Object o : j.getJsonArray(member)) out.add(((JsonObject) o).getString("serial"));
    return out;
  }

  @Test
  void aNodeFromTheLoadedVersionOnGetsWhatCameAfterIt() {
    HeartbeatPki p = pki();
    assertEquals(List.of("c10"), serials(p.revocations(STATE, 8), "added"));
    assertEquals(List.of("b8", "c10"), serials(p.revocations(STATE, 6), "added"));
    assertEquals(List.of("b8", "c10"), serials(p.revocations(STATE, 7), "added"));
    assertEquals("{\"version\":10,\"unchanged\":true}", p.revocations(STATE, 10).toString());
  }

  @Test
  void aNodeBeforeTheLoadedVersionOrWithoutOneOrAheadGetsTheWholeList() {
    HeartbeatPki p = pki();
    for (long held : new long[] {5, 0, -1, 11}) {
      assertEquals(List.of("a5", "b8", "c10"), serials(p.revocations(STATE, held), "items"), "held " + held);
    }
  }

  @Test
  void eachPartIsEncodedOncePerListAndFromVersion() {
    HeartbeatPki p = pki();
    assertSame(p.revocations(STATE, 8), p.revocations(STATE, 8));
    assertSame(p.revocations(STATE, -1), p.revocations(STATE, 5));
    assertNotSame(p.revocations(STATE, 8), p.revocations(STATE, 7));
    // the cache is bounded: more from-versions than it keeps are still answered right
    Revocations.State big = new Revocations.State(1000, List.of(revoked("z", 1000)), 0);
    for (long held = 0; held < HeartbeatPki.DELTAS * 2; held++) {
      assertEquals("z", new JsonObject(p.revocations(big, held)).getJsonArray("added").getJsonObject(0).getString("serial"));
    }
    // a new list (another version) is encoded anew
    Revocations.State next = new Revocations.State(11, List.of(revoked("a5", 5), revoked("b8", 8), revoked("c10", 10), revoked("d11", 11)), 6);
    assertEquals(List.of("c10", "d11"), new JsonObject(p.revocations(next, 8)).getJsonArray("added").stream()
        .map(o -> ((JsonObject) o).getString("serial")).toList());
  }
}
