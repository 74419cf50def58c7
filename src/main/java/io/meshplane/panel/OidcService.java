package io.meshplane.panel;

import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.User;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Single sign-on's login, on values (no HTTP): the authorization code flow with PKCE (S256), a
 * single-use {@code state} bound to the browser that started it, a {@code nonce} the ID token must
 * carry, the ID token's checks ({@link IdTokenCheck}), the mapping of its claims to a role, team and
 * environment (first match wins), and then the panel's own session, exactly as a password login
 * makes it (a new session id; the session the browser held when it started the login is ended:
 * the start, a same-site navigation, receives the session's {@code SameSite=Strict} cookie, the
 * IdP's callback does not). Every refusal after the IdP answered is audited as
 * {@code session.oidc_login} denied, with the subject when it is known; an unexpected error too, as
 * {@code internal: <exception class>}.
 */
final class OidcService {
  private static final Logger LOG = LoggerFactory.getLogger(OidcService.class);

  /** Why a login was refused: the code the login page explains ({@code /#/login?error=<code>}). */
  static final class Failed extends RuntimeException {
    final String code;

    Failed(String code) {
      super(code, null, false, false);
      this.code = code;
    }
  }

  /** A started login: where to send the browser, and the value of its binding cookie. */
  record Started(String authorizeUrl, String binding) {}

  private final OidcSettings settings;
  private final OidcProvider provider;
  private final OidcPending pending;
  private final OidcUsers users;
  private final Sessions sessions;
  private final RateLimits limits;
  private final PanelMetrics metrics;

  OidcService(OidcSettings settings, OidcProvider provider, OidcPending pending, OidcUsers users, Sessions sessions, RateLimits limits,
      PanelMetrics metrics) {
    this.settings = settings;
    this.provider = provider;
    this.pending = pending;
    this.users = users;
    this.sessions = sessions;
    this.limits = limits;
    this.metrics = metrics;
  }

  /** What the login page shows: whether single sign-on is on, whether the IdP answers, the button's label, the IdP's logout. */
  JsonObject info() {
    return new JsonObject().put("enabled", settings.enabled()).put("available", settings.enabled() && provider.available())
        .put("label", settings.enabled() ? settings.buttonLabel() : null).put("end_session_url", endSessionUrl());
  }

  /**
   * RP-initiated logout at the IdP (its end_session_endpoint with this client and a way back to the
   * panel), or null when the IdP has none.
   */
  String endSessionUrl() {
    String endpoint = settings.enabled() ? provider.endSessionEndpoint() : null;
    if (endpoint == null) return null;
    URI r = URI.create(settings.redirectUri());
    String back = r.getScheme() + "://" + r.getRawAuthority() + "/";
    return endpoint + (endpoint.contains("?") ? "&" : "?") + "client_id=" + enc(settings.clientId()) + "&post_logout_redirect_uri=" + enc(back);
  }

  /**
   * Starts a login: rate-limited like a password login and by the cluster's bound on pending logins,
   * a new pending login in the cluster (with the key of the panel session {@code currentSession}, the
   * browser's session cookie, if any: ended when the login succeeds), the IdP's URL.
   */
  Future<Started> start(RequestInfo request, String currentSession) {
    if (!settings.enabled() || !provider.available()) return Future.failedFuture(new Failed("unavailable"));
    return limits.loginAttempt(address(request)).compose(verdict -> verdict.allowed() ? limits.oidcStart() : Future.succeededFuture(verdict))
        .compose(verdict -> {
      if (!verdict.allowed()) {
        metrics.loginRateLimited.increment();
        return Future.failedFuture(new Failed("rate_limited"));
      }
      String state = Sessions.random();
      String nonce = Sessions.random();
      String verifier = Sessions.random();
      String binding = Sessions.random();
      String previous = currentSession != null && Sessions.wellFormed(currentSession) ? Sessions.digest(currentSession) : null;
      String url = provider.authorizeUrl(state, nonce, s256(verifier));
      return pending.put(state, new OidcPending.Login(nonce, verifier, Sessions.digest(binding), System.currentTimeMillis(), previous))
          .map(v -> new Started(url, binding));
    });
  }

  /**
   * The IdP's answer: {@code code} and {@code state}, or {@code error} (the person cancelled, the IdP
   * refused); {@code iss} when the IdP names itself (RFC 9207), which must then be the issuer.
   * {@code binding} is the browser's binding cookie. On success the session the browser held when
   * the login started is ended. Fails with {@link Failed} only: any other error is refused as
   * {@code failed} and audited with its class ({@code internal: <class>}).
   */
  Future<SessionService.SignedIn> callback(String code, String state, String error, String iss, String binding, RequestInfo request) {
    if (!settings.enabled()) return Future.failedFuture(new Failed("unavailable"));
    return limits.loginAttempt(address(request)).compose(verdict -> {
      if (!verdict.allowed()) {
        metrics.loginRateLimited.increment();
        return Future.failedFuture(new Failed("rate_limited"));
      }
      return state == null ? Future.succeededFuture(null) : pending.take(state);
    }).compose(login -> {
      if (login == null) return refuse(null, "state unknown, expired or already used", "expired_login", request);
      if (binding == null || !Sessions.wellFormed(binding) || !MessageDigest.isEqual(Sessions.digest(binding).getBytes(StandardCharsets.US_ASCII),
          login.browserDigest().getBytes(StandardCharsets.US_ASCII))) {
        return refuse(null, "the callback does not come from the browser that started the login", "expired_login", request);
      }
      // RFC 9207: an answer naming another issuer comes from another IdP (a mix-up), whatever else it says
      if (iss != null && !iss.equals(provider.issuer() == null ? settings.issuer() : provider.issuer())) {
        return refuse(null, "the callback's iss is not the issuer", "invalid_token", request);
      }
      if (error != null) {
        String e = error.matches("^[a-z_]{1,40}$") ? error : "other";
        return refuse(null, "the identity provider answered " + e, "idp_refused", request);
      }
      if (code == null || code.isEmpty() || code.length() > 4096) return refuse(null, "no authorization code", "idp_refused", request);
      if (!provider.available()) return Future.failedFuture(new Failed("unavailable"));
      return provider.exchange(code, login.codeVerifier())
          .recover(t -> {
            // the library's message may carry the IdP's answer: only its class and first words (a status or an error code)
            LOG.warn("single sign-on: the authorization code could not be exchanged: {}", summary(t));
            return refuse(null, "the code exchange failed", "exchange_failed", request);
          })
          .compose(user -> signIn(user, login, request));
    }).recover(t -> t instanceof Failed ? Future.failedFuture(t) : internal(null, t, request));
  }

  /**
   * A failure's class and the head of its message up to the first colon when that is a few plain
   * words (an HTTP status line, an OAuth error code): never a response body, a token or a code.
   */
  static String summary(Throwable t) {
    String m = t.getMessage() == null ? "" : t.getMessage();
    int colon = m.indexOf(':');
    String head = (colon < 0 ? m : m.substring(0, colon)).trim();
    if (!head.matches("^[A-Za-z0-9 _.\\-]{1,60}$")) head = "(message withheld)";
    return t.getClass().getSimpleName() + ": " + head;
  }

  private Future<SessionService.SignedIn> signIn(User user, OidcPending.Login login, RequestInfo request) {
    JsonObject claims;
    try {
      claims = IdTokenCheck.check(user.principal().getString("id_token"), user.attributes().getJsonObject("idToken"), provider.issuer(),
          settings.clientId(), login.nonce(), System.currentTimeMillis() / 1000);
    } catch (IdTokenCheck.Invalid e) {
      return refuse(null, e.reason, "invalid_token", request);
    }
    OidcMapping m = settings.map(claims);
    if (m == null) return refuse(claims, "no mapping matches the identity provider's claims", "no_role", request);
    String issuer = provider.issuer();
    return users.upsert(issuer, claims, m, request).compose(u -> {
      if (u == null) return refuse(claims, "the user is disabled in the panel", "disabled", request);
      // the session the browser held when the login started (its cookie is Strict: the callback does not carry it)
      Future<Void> endPrevious = login.previousSession() == null ? Future.succeededFuture() : sessions.end(login.previousSession());
      // as for a password login: the session first, then the login on the record only if the user is
      // still as read (a change that committed meanwhile ended the user's sessions before this one existed)
      return endPrevious.compose(v -> sessions.create(u, UserRecord.OIDC)).compose(created -> users.loggedIn(u, claims, request)
          .recover(t -> sessions.end(created.session().key()).transform(x -> Future.<Boolean>failedFuture(t)))
          .compose(current -> current ? Future.succeededFuture(new SessionService.SignedIn(created.session(), created.id()))
              : sessions.end(created.session().key()).compose(x -> refuse(claims, "the user changed during the login", "failed", request))));
    }).recover(t -> t instanceof Failed ? Future.failedFuture(t) : internal(claims, t, request))
        .onSuccess(s -> metrics.loginSuccess.increment());
  }

  /** An unexpected error (the database, the cluster): a refusal like the others, audited by its class only. */
  private <T> Future<T> internal(JsonObject claims, Throwable t, RequestInfo request) {
    LOG.warn("single sign-on: a login failed: {}", summary(t));
    return refuse(claims, "internal: " + t.getClass().getName(), "failed", request);
  }

  private <T> Future<T> refuse(JsonObject claims, String reason, String code, RequestInfo request) {
    metrics.loginFailure.increment();
    return users.refused(provider.issuer() == null ? settings.issuer() : provider.issuer(), claims, reason, request)
        .transform(ar -> Future.failedFuture(new Failed(code)));
  }

  private static String address(RequestInfo request) {
    return request.sourceAddress() == null ? "unknown" : request.sourceAddress();
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** The PKCE challenge of a verifier: base64url(SHA-256(verifier)), no padding (RFC 7636 §4.2). */
  static String s256(String verifier) {
    try {
      return Base64.getUrlEncoder().withoutPadding()
          .encodeToString(MessageDigest.getInstance("SHA-256").digest(verifier.getBytes(StandardCharsets.US_ASCII)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
