package io.meshplane.panel;

import java.time.Duration;
import java.util.List;

/**
 * Single sign-on with an OpenID Connect identity provider ({@code panel.oidc.*}, docs/OPERATIONS.md
 * "Single sign-on"). Off when {@code issuer} is empty. The client secret is kept here only: never
 * logged, never in {@link #toString()}.
 *
 * @param issuer the IdP's issuer URL (its discovery document is {@code issuer + /.well-known/openid-configuration})
 * @param redirectUri the callback the IdP sends the browser back to: {@code https://panel.example/api/v1/session/oidc/callback}
 * @param scopes asked of the IdP; always includes {@code openid}
 * @param mappings claims to role, team and environment: the first that matches wins
 * @param buttonLabel the login page's button: "Sign in with {@code buttonLabel}"
 * @param timeout every HTTP call to the IdP (discovery, keys, code exchange) ends within it
 * @param maxPending the cluster's bound on logins started and not finished ({@code panel.oidc.max_pending}): the starts of
 *     the whole cluster are limited to {@code maxPending / 2} at once plus {@code maxPending / 2} per {@link #PENDING_TTL},
 *     so the pending map never holds more; beyond it a start is refused ({@code rate_limited})
 */
public record OidcSettings(String issuer, String clientId, String clientSecret, String redirectUri, List<String> scopes,
    List<OidcMapping> mappings, String buttonLabel, Duration timeout, int maxPending) {
  /** The default of {@code panel.oidc.max_pending}. */
  public static final int DEFAULT_MAX_PENDING = 10_000;
  /** Single sign-on off (the default). */
  public static final OidcSettings OFF = new OidcSettings("", "", "", "", List.of(), List.of(), "", Duration.ofSeconds(10), DEFAULT_MAX_PENDING);
  /** How long a started login may take at the IdP before its callback is refused (the pending record's TTL). */
  static final Duration PENDING_TTL = Duration.ofMinutes(10);

  public OidcSettings {
    scopes = List.copyOf(scopes);
    mappings = List.copyOf(mappings);
    if (maxPending < 2) throw new IllegalArgumentException("maxPending must be at least 2");
  }

  public boolean enabled() {
    return !issuer.isEmpty();
  }

  /** The first rule matching the claims, or null: the login is refused. */
  OidcMapping map(io.vertx.core.json.JsonObject claims) {
    for (OidcMapping m : mappings) {
      if (m.matches(claims)) return m;
    }
    return null;
  }

  @Override
  public String toString() {
    return "OidcSettings[issuer=" + issuer + ", client_id=" + clientId + ", client_secret=(hidden), redirect_uri=" + redirectUri
        + ", scopes=" + scopes + ", mappings=" + mappings.size() + ", button_label=" + buttonLabel + ", max_pending=" + maxPending + "]";
  }
}
