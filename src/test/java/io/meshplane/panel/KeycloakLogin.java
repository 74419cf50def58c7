package io.meshplane.panel;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A person at Keycloak's login form, over plain HTTP (for the tests that look at the callback itself):
 * opens the authorization URL the panel redirected to, fills Keycloak's real login form, and returns
 * the callback URL Keycloak redirects back to (with the code and the state). Keeps Keycloak's cookies,
 * so a second login of the same person goes straight through, as in a browser.
 */
final class KeycloakLogin {
  private static final Pattern FORM = Pattern.compile("<form[^>]*id=\"kc-form-login\"[^>]*action=\"([^\"]+)\"", Pattern.DOTALL);
  private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).connectTimeout(Duration.ofSeconds(5))
      .build();
  /**
   * Keycloak's cookies, kept by hand: they are Secure, which java.net's cookie manager never sends over
   * plain http (Chromium does on loopback, a secure context).
   */
  private final Map<String, String> cookies = new LinkedHashMap<>();

  /** The callback URL Keycloak sends the browser to once {@code username} has signed in. */
  String login(String authorizeUrl, String username, String password) throws IOException, InterruptedException {
    HttpResponse<String> page = http.send(withCookies(HttpRequest.newBuilder(URI.create(authorizeUrl))).timeout(Duration.ofSeconds(20))
        .build(), HttpResponse.BodyHandlers.ofString());
    keep(page);
    if (page.statusCode() == 302) return page.headers().firstValue("Location").orElseThrow();
    if (page.statusCode() != 200) throw new AssertionError("Keycloak's login page: " + page.statusCode() + " " + page.body());
    Matcher m = FORM.matcher(page.body());
    if (!m.find()) throw new AssertionError("no login form on Keycloak's page: " + page.body());
    String action = m.group(1).replace("&amp;", "&");
    String form = "username=" + enc(username) + "&password=" + enc(password) + "&credentialId=";
    HttpResponse<String> done = http.send(withCookies(HttpRequest.newBuilder(URI.create(action))).timeout(Duration.ofSeconds(20))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(form)).build(),
        HttpResponse.BodyHandlers.ofString());
    keep(done);
    if (done.statusCode() != 302) throw new AssertionError("Keycloak did not sign " + username + " in: " + done.statusCode() + " " + done.body());
    return done.headers().firstValue("Location").orElseThrow();
  }

  private HttpRequest.Builder withCookies(HttpRequest.Builder b) {
    if (!cookies.isEmpty()) {
      b.header("Cookie", String.join("; ", cookies.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList()));
    }
    return b;
  }

  private void keep(HttpResponse<String> r) {
    for (String c : r.headers().allValues("Set-Cookie")) {
      String pair = c.contains(";") ? c.substring(0, c.indexOf(';')) : c;
      int eq = pair.indexOf('=');
      if (eq > 0) cookies.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
