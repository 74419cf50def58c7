package io.meshplane.module;

/**
 * A feature refuses to start because of a setting that could only be checked once PostgreSQL answered
 * (MeshCA's secret against the keys it sealed, say). The message names the setting and says what to
 * do; the start ends as with any bad setting (exit 2, no stack trace) and is not retried.
 */
public final class StartRefused extends RuntimeException {
  public StartRefused(String message) {
    super(message, null, false, false);
  }
}
