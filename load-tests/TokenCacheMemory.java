import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Grants;
import io.meshplane.access.Surface;
import io.meshplane.auth.VerifiedTokens;
import java.lang.management.ManagementFactory;
import java.util.Base64;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Heap cost of the token verifier's cache per agent: N synthetic tokens shaped like the agent tokens
 * the service issues (same header, the same claims with unique ids, an 86-character ES256 signature:
 * ~470 characters in all), each put into {@link VerifiedTokens} as the verifier does after a valid
 * signature check. Reports the heap growth after GC per entry. No signature is computed (the cache
 * is what is measured, not ECDSA); no network.
 *
 * Run: java -Xmx4g -cp target/meshplane.jar load-tests/TokenCacheMemory.java [entries, default 1000000]
 */
public class TokenCacheMemory {
  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
    String header = b64.encodeToString("{\"kid\":\"k20261122042102eac9\",\"typ\":\"JWT\",\"alg\":\"ES256\"}".getBytes());
    ThreadLocalRandom r = ThreadLocalRandom.current();
    // the tokens themselves are garbage once put: only what the cache keeps is measured
    long before = usedHeapAfterGc();
    VerifiedTokens cache = new VerifiedTokens(n);
    for (int i = 0; i < n; i++) {
      String node = String.format("nd_01m80qrysm%016d", i);
      String jti = String.format("tok_01m80qryt%016d", i);
      String name = "agent:node-" + i;
      String payload = b64.encodeToString(("{\"iss\":\"meshplane\",\"aud\":\"meshplane/v1\",\"sub\":\"" + node + "\",\"jti\":\"" + jti
          + "\",\"iat\":1795321264,\"nbf\":1795321264,\"exp\":1803097264,\"name\":\"" + name
          + "\",\"team\":\"bench\",\"env\":\"prod\",\"srf\":\"agent\"}").getBytes());
      byte[] sig = new byte[64];
      r.nextBytes(sig);
      String jwt = header + "." + payload + "." + b64.encodeToString(sig);
      // claims arrive as fresh strings from the JSON parser, as in the verifier
      // built as TokenVerifier builds an agent token's caller
      cache.put(jwt, new Caller(Caller.Kind.NODE, new String(node), new String(name), new Boundary(new String("bench"), new String("prod")),
          Grants.of(Surface.AGENT), new String(jti), 1803097264000L));
      if (i == 0) System.out.println("token length: " + jwt.length() + " characters");
    }
    long after = usedHeapAfterGc();
    if (cache.size() != n) throw new IllegalStateException("expected " + n + " entries, found " + cache.size());
    System.out.printf("entries: %d%nheap growth after GC: %.1f MB, %.1f bytes per entry%n", n, (after - before) / 1e6, (after - before) / (double) n);
  }

  private static long usedHeapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
