package io.meshplane.access;

import io.vertx.core.Future;
import io.vertx.core.http.HttpServerRequest;

/**
 * One way in: turns a request's credential into a {@link Caller}, or fails with a
 * {@link io.meshplane.common.Refusal} of kind UNAUTHENTICATED. Bearer tokens for {@code /v1}; the panel
 * adds sessions with CSRF for {@code /api/v1}. Runs on the event loop, once per request: no blocking.
 */
public interface Authenticator {
  Future<Caller> authenticate(HttpServerRequest request);

  /**
   * The caller a refused credential belonged to, when it can still be told (a revoked token whose
   * signature was verified before), so that the attempt can be audited under its name; else null.
   */
  default Caller attributable(HttpServerRequest request) {
    return null;
  }
}
