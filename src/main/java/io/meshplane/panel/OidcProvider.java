package io.meshplane.panel;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.JWTOptions;
import io.vertx.ext.auth.User;
import io.vertx.ext.auth.oauth2.OAuth2Auth;
import io.vertx.ext.auth.oauth2.OAuth2AuthorizationURL;
import io.vertx.ext.auth.oauth2.OAuth2FlowType;
import io.vertx.ext.auth.oauth2.OAuth2Options;
import io.vertx.ext.auth.oauth2.Oauth2Credentials;
import io.vertx.ext.auth.oauth2.providers.OpenIDConnectAuth;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The identity provider as this replica knows it: its discovery document and signing keys, loaded
 * with vertx-auth-oauth2's {@link OpenIDConnectAuth#discover} on the event loop's HTTP client (never
 * blocking it), every call bounded by {@code panel.oidc.timeout}. A provider that cannot be reached
 * does not stop the replica: discovery is retried in the background (5 s, doubling to 5 min) and,
 * until it succeeds, the login page says the provider is unavailable. The signing keys are
 * refreshed by the library on the IdP's schedule, and at once (at most every 30 s) when a token names
 * a key this replica does not know (a key rotation).
 */
final class OidcProvider {
  private static final Logger LOG = LoggerFactory.getLogger(OidcProvider.class);
  private static final long FIRST_RETRY_MS = 5_000;
  private static final long MAX_RETRY_MS = 300_000;
  private static final long KEY_REFRESH_MIN_MS = 30_000;

  private final Vertx vertx;
  private final OidcSettings settings;
  private volatile OAuth2Auth auth;
  private volatile String issuer;
  private volatile String endSession;
  private volatile boolean stopped;
  private long retryMs = FIRST_RETRY_MS;
  private long timer = -1;
  private final AtomicLong lastKeyRefresh = new AtomicLong();

  OidcProvider(Vertx vertx, OidcSettings settings) {
    this.vertx = vertx;
    this.settings = settings;
  }

  /** Starts discovery in the background; the replica's start does not wait for it. */
  void start() {
    if (settings.enabled()) discover();
  }

  void stop() {
    stopped = true;
    if (timer >= 0) vertx.cancelTimer(timer);
    OAuth2Auth a = auth;
    if (a instanceof io.vertx.core.Closeable c) c.close(io.vertx.core.Promise.promise());
  }

  /** True once the discovery document and the keys are loaded. */
  boolean available() {
    return auth != null;
  }

  /** The issuer the discovery document declared (ID tokens must carry it exactly). */
  String issuer() {
    return issuer;
  }

  /** The IdP's end_session_endpoint, or null when it has none (or discovery has not succeeded). */
  String endSessionEndpoint() {
    return endSession;
  }

  /**
   * The discovery document's end_session_endpoint when it is safe to put in a link on the login page:
   * an absolute {@code https://} URL (plain {@code http://} only on loopback, as for the issuer) with
   * a host and no user info; anything else ({@code javascript:}, a relative path, ...) is null, as if
   * the IdP had none.
   */
  static String endSessionEndpoint(String raw) {
    if (raw == null || raw.isEmpty() || raw.length() > 2000) return null;
    java.net.URI u;
    try {
      u = new java.net.URI(raw);
    } catch (java.net.URISyntaxException e) {
      return null;
    }
    String host = u.getHost();
    if (host == null || u.getRawUserInfo() != null || u.getRawFragment() != null) return null;
    boolean https = "https".equalsIgnoreCase(u.getScheme());
    boolean loopbackHttp = "http".equalsIgnoreCase(u.getScheme())
        && (host.equals("localhost") || host.matches("^127(\\.[0-9]{1,3}){3}$") || host.equals("[::1]"));
    return https || loopbackHttp ? raw : null;
  }

  private void discover() {
    if (stopped) return;
    long ms = settings.timeout().toMillis();
    HttpClientOptions http = new HttpClientOptions().setConnectTimeout((int) Math.min(Integer.MAX_VALUE, ms))
        .setIdleTimeout((int) Math.max(1, settings.timeout().toSeconds())).setIdleTimeoutUnit(TimeUnit.SECONDS);
    OAuth2Options options = new OAuth2Options().setSite(settings.issuer()).setClientId(settings.clientId())
        .setClientSecret(settings.clientSecret()).setHttpClientOptions(http)
        .setValidateIssuer(true).setJWTOptions(new JWTOptions().setLeeway(30)).setUserAgent("meshplane");
    OpenIDConnectAuth.discover(vertx, options).timeout(ms * 3, TimeUnit.MILLISECONDS).onComplete(ar -> {
      if (stopped) return;
      if (ar.succeeded()) {
        OAuth2Options found = options;
        issuer = found.getJWTOptions().getIssuer() == null ? settings.issuer() : found.getJWTOptions().getIssuer();
        endSession = endSessionEndpoint(found.getLogoutPath());
        if (endSession == null && found.getLogoutPath() != null) {
          LOG.warn("single sign-on: the identity provider's end_session_endpoint is not an https:// URL (plain http only on loopback): "
              + "ignored, the login page offers no sign-out at the IdP");
        }
        OAuth2Auth a = ar.result();
        a.missingKeyHandler(kid -> refreshKeys(a));
        auth = a;
        LOG.info("single sign-on: the identity provider {} is available (end_session_endpoint: {})", settings.issuer(),
            endSession == null ? "none" : "yes");
        return;
      }
      // the message names the URL and the status, never the client secret (the library does not put it there)
      LOG.warn("single sign-on: the identity provider {} cannot be discovered ({}); retrying in {} s", settings.issuer(),
          ar.cause().getMessage(), retryMs / 1000);
      timer = vertx.setTimer(retryMs, t -> discover());
      retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
    });
  }

  private void refreshKeys(OAuth2Auth a) {
    long now = System.currentTimeMillis();
    long last = lastKeyRefresh.get();
    if (now - last < KEY_REFRESH_MIN_MS || !lastKeyRefresh.compareAndSet(last, now)) return;
    a.jWKSet().timeout(settings.timeout().toMillis(), TimeUnit.MILLISECONDS)
        .onFailure(t -> LOG.warn("single sign-on: the identity provider's keys cannot be refreshed: {}", t.getMessage()));
  }

  /** The IdP's authorization URL for a new login: code flow, PKCE S256, state and nonce. */
  String authorizeUrl(String state, String nonce, String codeChallenge) {
    // the nonce first: setAdditionalParameters replaces the map the other setters write into
    return auth.authorizeURL(new OAuth2AuthorizationURL().setAdditionalParameters(new HashMap<>(Map.of("nonce", nonce)))
        .setRedirectUri(settings.redirectUri()).setScopes(settings.scopes()).setState(state).setCodeChallenge(codeChallenge)
        .setCodeChallengeMethod("S256"));
  }

  /**
   * Exchanges the code for tokens (with the PKCE verifier), within the timeout. The answer is the
   * library's user: its principal holds the token response, its attributes the ID token's claims when
   * the library could verify its signature with the IdP's keys (and its issuer and audience).
   */
  Future<User> exchange(String code, String codeVerifier) {
    OAuth2Auth a = auth;
    if (a == null) return Future.failedFuture(new IllegalStateException("the identity provider is unavailable"));
    return a.authenticate(new Oauth2Credentials().setFlow(OAuth2FlowType.AUTH_CODE).setCode(code).setCodeVerifier(codeVerifier)
        .setRedirectUri(settings.redirectUri())).timeout(settings.timeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  Duration timeout() {
    return settings.timeout();
  }
}
