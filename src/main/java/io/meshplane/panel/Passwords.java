package io.meshplane.panel;

import com.password4j.Argon2Function;
import com.password4j.Password;
import com.password4j.types.Argon2;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Password hashing for panel users: argon2id (Password4j, pure Java) with OWASP's first
 * recommendation, m = 19 MiB, t = 2, p = 1, a 16-byte random salt and a 32-byte hash, stored in PHC
 * form ({@code $argon2id$v=19$m=19456,t=2,p=1$…}) so a hash carries its own parameters and old
 * hashes keep verifying if the parameters are raised.
 *
 * <p>Hashing is deliberately slow and memory-hungry, so it never runs on an event loop: it runs on a
 * worker pool of its own with {@value #THREADS} threads, which also bounds the memory in use
 * (19 MiB per hash in flight) however many logins arrive at once; the others queue (and the login
 * rate limits bound the queue). A login for an unknown username verifies against a dummy hash made
 * with the same parameters, so the answer takes as long as for a known one.
 */
final class Passwords {
  static final int MEMORY_KIB = 19_456;
  static final int ITERATIONS = 2;
  static final int PARALLELISM = 1;
  static final int HASH_BYTES = 32;
  static final int SALT_BYTES = 16;
  private static final int THREADS = 2;
  private static final Argon2Function ARGON2 = Argon2Function.getInstance(MEMORY_KIB, ITERATIONS, PARALLELISM, HASH_BYTES, Argon2.ID);

  private final WorkerExecutor workers;
  private final String dummy;

  public Passwords(Vertx vertx) {
    this.workers = vertx.createSharedWorkerExecutor("meshplane-passwords", THREADS);
    byte[] random = new byte[24];
    new SecureRandom().nextBytes(random);
    this.dummy = hashNow(Base64.getEncoder().encodeToString(random));
  }

  /** The PHC string of {@code password}, computed off the event loop. */
  public Future<String> hash(String password) {
    return workers.executeBlocking(() -> hashNow(password), false);
  }

  /**
   * True when {@code password} matches {@code stored}; with {@code stored} null (no such user) it
   * verifies against the dummy hash and answers false, in the same time.
   */
  public Future<Boolean> verify(String password, String stored) {
    return workers.executeBlocking(() -> {
      boolean ok = checkNow(password, stored == null ? dummy : stored);
      return ok && stored != null;
    }, false);
  }

  /** Blocking: for the command line (and the constructor's dummy). */
  public static String hashNow(String password) {
    return Password.hash(password).addRandomSalt(SALT_BYTES).with(ARGON2).getResult();
  }

  private static boolean checkNow(String password, String stored) {
    try {
      return Password.check(password, stored).with(Argon2Function.getInstanceFromHash(stored));
    } catch (RuntimeException malformed) {
      // a hash that is not a PHC argon2 string matches nothing
      return false;
    }
  }

  public void close() {
    workers.close();
  }
}
