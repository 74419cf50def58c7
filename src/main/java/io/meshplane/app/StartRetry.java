package io.meshplane.app;

import io.meshplane.http.DatabaseFailures;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The second phase's patience with PostgreSQL ({@link Meshplane#launch}): each step that needs it is
 * retried with backoff (1 s doubling to 15 s) for as long as PostgreSQL cannot be reached, and the
 * reason of the last attempt is what {@code /readyz} shows ({@link #waitingFor()}). A refusal that
 * waiting cannot fix (credentials, database name) ends the start with a {@link ConfigException}; any
 * other failure with its cause. A replica being stopped stops waiting.
 */
final class StartRetry {
  private static final Logger LOG = LoggerFactory.getLogger(StartRetry.class);
  static final long RETRY_MIN_MS = 1000;
  static final long RETRY_MAX_MS = 15_000;

  /** One try of a step of the start. */
  interface Attempt<T> {
    T run() throws Exception;
  }

  private final BooleanSupplier closing;
  /** Why the API is not served yet (shown by the postgres and deployment checks until the second phase ends). */
  private volatile String waitingFor = "connecting to PostgreSQL";

  /** @param closing true once the replica is being stopped: a retry then ends with an InterruptedException */
  StartRetry(BooleanSupplier closing) {
    this.closing = closing;
  }

  String waitingFor() {
    return waitingFor;
  }

  /**
   * Runs {@code attempt}, retrying with backoff (1 s doubling to 15 s) for as long as PostgreSQL cannot
   * be reached; a refusal of the credentials stops the start with a {@link ConfigException}, any other
   * failure with its cause.
   */
  <T> T retrying(String what, Attempt<T> attempt) throws InterruptedException {
    long wait = RETRY_MIN_MS;
    for (int n = 1; ; n++) {
      if (closing.getAsBoolean()) throw new InterruptedException("stopping");
      try {
        T result = attempt.run();
        waitingFor = "starting";
        return result;
      } catch (io.meshplane.module.StartRefused e) {
        // a setting checked against what PostgreSQL holds (MeshCA's secret): waiting cannot fix it
        throw new ConfigException(e.getMessage());
      } catch (Exception e) {
        if (Database.isFatal(e)) {
          throw new ConfigException("PostgreSQL refused this replica (" + rootMessage(e)
              + "); check postgres.url (env MESH_PG_URL): user, password and database name");
        }
        // JDBC (migrations) and the reactive client (the modules' loads) say "unreachable" in their own ways
        if (!Database.isUnreachable(e) && !DatabaseFailures.isUnavailable(e)) {
          throw new IllegalStateException(what + " failed: " + rootMessage(e), e);
        }
        waitingFor = "not reachable yet (" + what + ", attempt " + n + "): " + rootMessage(e);
        LOG.warn("PostgreSQL: {}; retrying in {} ms", waitingFor, wait);
        Thread.sleep(wait);
        wait = Math.min(RETRY_MAX_MS, wait * 2);
      }
    }
  }

  /** The first sentence of the innermost cause: what the driver said, without a stack trace. */
  static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) c = c.getCause();
    String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    int dot = m.indexOf(". ");
    return (dot > 0 ? m.substring(0, dot) : m).replace('\n', ' ');
  }
}
