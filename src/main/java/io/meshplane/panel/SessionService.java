package io.meshplane.panel;

import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;

/**
 * Signing in and out of the panel, on values (no HTTP): the login's rate limits per source address
 * and per username + address (checked before the password is), the password check (one 401 for an
 * unknown user, a wrong password and a disabled user, in the same time: see {@link Passwords}), a new
 * session on every success (a session the browser held before is ended: no fixation), and the login
 * on the record, with the session ended again when the user changed meanwhile.
 */
final class SessionService {
  /** A login that succeeded: the new session and the id its cookie carries. */
  record SignedIn(Session session, String cookieValue) {}

  private final UserService users;
  private final Sessions sessions;
  private final RateLimits limits;
  private final PanelMetrics metrics;

  SessionService(UserService users, Sessions sessions, RateLimits limits, PanelMetrics metrics) {
    this.users = users;
    this.sessions = sessions;
    this.limits = limits;
    this.metrics = metrics;
  }

  /**
   * Signs {@code name} (canonical) in with {@code password}. {@code previous} is the session id the
   * browser sent (null: none), ended on success. Fails with 429 {@code rate_limited} (with
   * Retry-After) or 401.
   */
  Future<SignedIn> login(String name, String password, RequestInfo request, String previous) {
    String address = request.sourceAddress() == null ? "unknown" : request.sourceAddress();
    return limits.loginAttempt(address)
        .compose(v -> v.allowed() ? limits.loginAttempt(name, address) : Future.succeededFuture(v))
        .compose(verdict -> {
          if (!verdict.allowed()) {
            metrics.loginRateLimited.increment();
            metrics.rateLimitedLogin.increment();
            return Future.failedFuture(Refusal.rateLimited("too many login attempts; retry in " + verdict.retryAfterSeconds() + " s",
                (int) Math.max(1, verdict.retryAfterSeconds())));
          }
          return users.check(name, password).compose(user -> user == null ? failed(name, request) : start(user, name, address, request,
              previous));
        });
  }

  private Future<SignedIn> failed(String name, RequestInfo request) {
    metrics.loginFailure.increment();
    return users.byUsername(name)
        .compose(known -> users.loginFailed(known, name, request))
        .compose(v -> Future.failedFuture(Refusal.unauthenticated("wrong username or password")));
  }

  private Future<SignedIn> start(UserRecord user, String name, String address, RequestInfo request, String previous) {
    Future<Void> endPrevious = previous == null || !Sessions.wellFormed(previous)
        ? Future.succeededFuture() : sessions.end(Sessions.digest(previous));
    // the session is stored first, then the login is recorded only if the user is still as it was
    // read: a change that committed meanwhile (disabled, new role or password) ended the user's
    // sessions before this one existed, so this one is ended here instead
    return endPrevious
        .compose(v -> sessions.create(user))
        .compose(created -> users.loggedIn(user, request)
            .recover(t -> sessions.end(created.session().key()).transform(x -> Future.<Boolean>failedFuture(t)))
            .compose(current -> current ? Future.succeededFuture()
                : sessions.end(created.session().key()).compose(x -> Future.failedFuture(Refusal.unauthenticated("wrong username or password"))))
            .compose(v -> limits.loginSucceeded(name, address))
            .map(v -> {
              metrics.loginSuccess.increment();
              return new SignedIn(created.session(), created.id());
            }));
  }
}
