package io.meshplane.panel;

import io.meshplane.access.Authenticator;
import io.meshplane.access.Caller;
import io.meshplane.access.Refused;
import io.meshplane.common.Refusal;
import io.vertx.core.Future;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import java.util.List;

/**
 * The panel's way in (API.md §17): a session cookie, never a bearer token (scripts use the coordinator
 * API). For every request: the session is looked up in the cluster (401 when there is none, or when
 * the session cookie comes more than once), the session's request rate is counted (429 with
 * {@code Retry-After}), and a mutating request must carry exactly one {@code X-CSRF-Token}, equal to
 * the session's token (403 {@code csrf_failed}, audited under the session's user like any denial).
 * Safe methods (GET, HEAD) need no CSRF token and change nothing.
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
    if (count(request, cookieName) > 1) {
      // which one is the person's? A cookie set for a parent domain by another site can shadow the
      // session's: no session is picked, and no caller is known to audit
      return Future.failedFuture(Refusal.unauthenticated("the session cookie is sent more than once (one may be set by another site "
          + "of this domain): clear this site's cookies and sign in again"));
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
        List<String> csrf = request.headers().getAll(CSRF_HEADER);
        // exactly one header, equal to the session's: a second one, right or wrong, is not picked from
        if (mutating(request.method()) && (csrf.size() != 1 || !Sessions.sameToken(csrf.get(0), session.csrf()))) {
          metrics.csrfFailures.increment();
          return Future.failedFuture(new Refused(caller, new Refusal(Refusal.Kind.FORBIDDEN, "csrf_failed",
              "this request changes something and needs the header " + CSRF_HEADER + " with the session's csrf_token")));
        }
        return Future.succeededFuture(caller);
      });
    });
  }

  /**
   * How many cookies named {@code name} the request's Cookie headers carry, all of them counted (as a
   * cookie parser splits them: at {@code ;}, and at {@code ,}, which no cookie value may hold).
   */
  static int count(HttpServerRequest request, String name) {
    int n = 0;
    for (String header : request.headers().getAll(HttpHeaders.COOKIE)) {
      for (String pair : header.split("[;,]")) {
        int eq = pair.indexOf('=');
        if (eq > 0 && pair.substring(0, eq).trim().equals(name)) n++;
      }
    }
    return n;
  }

  static boolean mutating(HttpMethod m) {
    return !(m == HttpMethod.GET || m == HttpMethod.HEAD || m == HttpMethod.OPTIONS);
  }
}
