package io.meshplane.panel;

import io.meshplane.access.Authenticator;
import io.meshplane.access.Caller;
import io.meshplane.access.Refused;
import io.meshplane.common.Refusal;
import io.vertx.core.Future;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;

/**
 * The panel's way in (SPEC §7): a session cookie, never a bearer token (scripts use the coordinator
 * API). For every request: the session is looked up in the cluster (401 when there is none), the
 * session's request rate is counted (429 with {@code Retry-After}), and a mutating request must carry
 * {@code X-CSRF-Token} equal to the session's token (403 {@code csrf_failed}, audited under the
 * session's user like any denial). Safe methods (GET, HEAD) need no CSRF token and change nothing.
 */
final class SessionAuthenticator implements Authenticator {
  static final String CSRF_HEADER = "X-CSRF-Token";

  private final Sessions sessions;
  private final RateLimits limits;
  private final PanelMetrics metrics;
  private final String cookieName;

  SessionAuthenticator(Sessions sessions, RateLimits limits, PanelMetrics metrics, String cookieName) {
    this.sessions = sessions;
    this.limits = limits;
    this.metrics = metrics;
    this.cookieName = cookieName;
  }

  @Override
  public Future<Caller> authenticate(HttpServerRequest request) {
    if (request.getHeader("Authorization") != null) {
      return Future.failedFuture(Refusal.unauthenticated(
          "the panel API takes a session cookie, not an Authorization header: scripts use the coordinator API (/v1) with a token"));
    }
    Cookie cookie = request.getCookie(cookieName);
    if (cookie == null) return Future.failedFuture(Refusal.unauthenticated("sign in first: POST /api/v1/session"));
    return sessions.find(cookie.getValue()).compose(session -> {
      if (session == null) return Future.failedFuture(Refusal.unauthenticated("the session has ended or expired: sign in again"));
      return limits.apiRequest(session.key()).compose(verdict -> {
        if (!verdict.allowed()) {
          metrics.rateLimitedApi.increment();
          request.response().putHeader("Retry-After", Long.toString(verdict.retryAfterSeconds()));
          return Future.failedFuture(new Refusal(Refusal.Kind.RATE_LIMITED, "rate_limited",
              "too many requests in this session; retry in " + verdict.retryAfterSeconds() + " s"));
        }
        Caller caller = session.caller();
        if (mutating(request.method()) && !Sessions.sameToken(request.getHeader(CSRF_HEADER), session.csrf())) {
          metrics.csrfFailures.increment();
          return Future.failedFuture(new Refused(caller, new Refusal(Refusal.Kind.FORBIDDEN, "csrf_failed",
              "this request changes something and needs the header " + CSRF_HEADER + " with the session's csrf_token")));
        }
        return Future.succeededFuture(caller);
      });
    });
  }

  static boolean mutating(HttpMethod m) {
    return !(m == HttpMethod.GET || m == HttpMethod.HEAD || m == HttpMethod.OPTIONS);
  }
}
