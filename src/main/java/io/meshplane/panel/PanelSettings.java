package io.meshplane.panel;

import java.time.Duration;

/**
 * The panel's settings (config/meshplane.yaml, {@code panel.*}).
 *
 * @param cookieSecure the session cookie's {@code Secure} flag (false only for local http)
 * @param sessionIdle a session unused this long ends
 * @param sessionLifetime a session ends this long after login, used or not
 * @param loginFailures failed logins per username + source address within {@code loginWindow}
 * @param loginWindow the window those failures are counted in (it starts at the first failure; when it ends, every try is back)
 * @param loginPerAddressPerMinute login attempts per source address per minute, whatever the username
 * @param apiRate requests per second per session
 * @param apiBurst the burst per session above that rate
 * @param seriesInterval how often each replica samples the overview's series (one point of the last-hour view)
 * @param oidc single sign-on with an OpenID Connect identity provider ({@link OidcSettings#OFF}: none)
 */
public record PanelSettings(boolean cookieSecure, Duration sessionIdle, Duration sessionLifetime, int loginFailures, Duration loginWindow,
    int loginPerAddressPerMinute, int apiRate, int apiBurst, Duration seriesInterval, OidcSettings oidc) {
  /** The defaults of config/meshplane.yaml. */
  public static PanelSettings defaults(boolean cookieSecure) {
    return new PanelSettings(cookieSecure, Duration.ofMinutes(30), Duration.ofHours(12), 5, Duration.ofMinutes(15), 30, 20, 40, Duration.ofSeconds(10),
        OidcSettings.OFF);
  }
}
