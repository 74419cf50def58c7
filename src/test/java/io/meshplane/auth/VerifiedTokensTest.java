package io.meshplane.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Grants;
import io.meshplane.access.Surface;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The verifier's cache: a hit needs the exact token; the bound holds; entries share their scope. */
class VerifiedTokensTest {
  private static final String HEADER = "eyJraWQiOiJrMSIsInR5cCI6IkpXVCIsImFsZyI6IkVTMjU2In0";

  private static String token(String payload, String sig) {
    return HEADER + "." + payload + "." + sig;
  }

  private static Caller principal(String id, long expires) {
    return new Caller(Caller.Kind.NODE, "nd_" + id, "agent:" + id, new Boundary(new String("team"), new String("prod")),
        Grants.of(Surface.AGENT), "tok_" + id, expires);
  }

  private static final long LATER = System.currentTimeMillis() + 3_600_000;

  @Test
  void aHitNeedsTheExactToken() {
    VerifiedTokens cache = new VerifiedTokens(10, Runnable::run);
    String payload = "eyJzdWIiOiJuZF8xIiwianRpIjoidG9rXzEifQ";
    String sig = "MEUCIQDx7k2lq9yW3Zb0dGc1VjQ4cGZ6S0pUc0hQb2xpY3lBbmRPcHNCeVRoZVNlc3Npb25fMTIzNDU2Nzg5MA";
    Caller p = principal("1", LATER);
    cache.put(token(payload, sig), p);
    Caller hit = cache.get(new String(token(payload, sig)));
    assertEquals(p, hit, "the same token text (another String) hits");

    List<String> altered = new ArrayList<>();
    altered.add(token(payload.replace('x', 'y'), sig));                  // payload changed, same signature
    altered.add(token(payload, sig.substring(0, sig.length() - 1) + "B")); // last signature character
    altered.add(token(payload, "X" + sig.substring(1)));                  // first signature character
    altered.add(token(payload, sig.substring(1)));                        // shorter signature
    altered.add(token(payload, sig) + "A");                               // longer signature
    altered.add("x" + token(payload, sig));                               // header changed
    altered.add(payload + "." + sig);                                     // a segment missing
    altered.add(token(payload, sig).replace('.', '_'));                   // no dot at all
    altered.add(token(payload, ""));                                      // empty signature
    for (String a : altered) assertNull(cache.get(a), a);
  }

  @Test
  void entriesShareTheirScopeAndKeepTheirIdentity() {
    VerifiedTokens cache = new VerifiedTokens(10, Runnable::run);
    cache.put(token("cGF5bG9hZDE", "c2lnbmF0dXJlMQ"), principal("1", LATER));
    cache.put(token("cGF5bG9hZDI", "c2lnbmF0dXJlMg"), principal("2", LATER));
    Caller one = cache.get(token("cGF5bG9hZDE", "c2lnbmF0dXJlMQ"));
    Caller two = cache.get(token("cGF5bG9hZDI", "c2lnbmF0dXJlMg"));
    assertSame(one.boundary(), two.boundary(), "one Boundary object for every entry of the same team and environment");
    assertEquals("nd_1", one.nodeId());
    assertEquals("nd_2", two.nodeId());
  }

  @Test
  void theBoundDropsExpiredTokensFirstThenAnEighth() {
    VerifiedTokens cache = new VerifiedTokens(16, Runnable::run);
    long past = System.currentTimeMillis() - 1;
    for (int i = 0; i < 8; i++) cache.put(token("ZXhwaXJlZA" + i, "c2ln" + i), principal("old" + i, past));
    for (int i = 0; i < 8; i++) cache.put(token("bGl2ZQ" + i, "c2lnbg" + i), principal("live" + i, LATER));
    assertEquals(16, cache.size());
    cache.put(token("bmV3", "bmV3c2ln"), principal("new", LATER));
    assertEquals(9, cache.size(), "the 8 expired tokens went, nothing else");
    for (int i = 0; i < 8; i++) assertEquals("nd_live" + i, cache.get(token("bGl2ZQ" + i, "c2lnbg" + i)).nodeId());

    for (int i = 0; i < 7; i++) cache.put(token("bW9yZQ" + i, "bW9yZXNpZw" + i), principal("more" + i, LATER));
    assertEquals(16, cache.size());
    cache.put(token("bGFzdA", "bGFzdHNpZw"), principal("last", LATER));
    assertEquals(15, cache.size(), "full of live tokens: an eighth (2) dropped, then the new one added");
    assertEquals("nd_last", cache.get(token("bGFzdA", "bGFzdHNpZw")).nodeId());
  }

  @Test
  void pruningRunsOffTheCallersThread() throws Exception {
    java.util.concurrent.CountDownLatch ran = new java.util.concurrent.CountDownLatch(1);
    String[] on = new String[1];
    VerifiedTokens cache = new VerifiedTokens(4, r -> new Thread(() -> {
      on[0] = Thread.currentThread().getName();
      r.run();
      ran.countDown();
    }, "pruner-under-test").start());
    long past = System.currentTimeMillis() - 1;
    for (int i = 0; i < 4; i++) cache.put(token("b2xk" + i, "c2ln" + i), principal("old" + i, past));
    cache.put(token("bmV3", "bmV3c2ln"), principal("new", LATER));
    assertTrue(ran.await(10, java.util.concurrent.TimeUnit.SECONDS), "the prune ran");
    assertEquals("pruner-under-test", on[0]);
    assertEquals(1, cache.size(), "the expired tokens were dropped by the pruner, the new one kept");
    assertEquals("nd_new", cache.get(token("bmV3", "bmV3c2ln")).nodeId());
  }

  @Test
  void theFingerprintSeesEveryCharacter() {
    String s = HEADER + ".eyJzdWIiOiJuZF8xIn0";
    long base = VerifiedTokens.fingerprint(s, s.length());
    for (int i = 0; i < s.length(); i++) {
      char[] c = s.toCharArray();
      c[i] = c[i] == 'A' ? 'B' : 'A';
      assertNotEquals(base, VerifiedTokens.fingerprint(new String(c), c.length), "position " + i);
    }
    assertTrue(VerifiedTokens.fingerprint(s, s.length() - 1) != base, "length counts");
  }
}
