package io.meshplane.app;

import io.meshplane.access.Role;
import io.meshplane.panel.OidcMapping;
import io.meshplane.panel.OidcSettings;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * {@code panel.oidc.*} (docs/OPERATIONS.md, "Single sign-on"), validated at start like every setting:
 * the first bad value stops the start with a {@link ConfigException} naming its key (a mapping by its
 * index). The client secret's value is never echoed.
 */
final class OidcConfig {
  private static final Pattern SLUG = Pattern.compile("^[a-z0-9][a-z0-9-]{0,62}$");
  private static final Pattern CLAIM = Pattern.compile("^[A-Za-z0-9_:\\-]{1,100}(\\.[A-Za-z0-9_:\\-]{1,100}){0,4}$");
  private static final Pattern SCOPE = Pattern.compile("^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,100}$");
  private static final Set<String> MAPPING_KEYS = Set.of("claim", "value", "role", "team", "environment");

  private OidcConfig() {}

  static OidcSettings parse(Map<String, String> v, Duration timeout, int maxPending) {
    String issuer = v.get(Setting.PANEL_OIDC_ISSUER.key).trim();
    List<OidcMapping> mappings = mappings(v);
    if (issuer.isEmpty()) {
      for (Setting s : new Setting[] {Setting.PANEL_OIDC_CLIENT_ID, Setting.PANEL_OIDC_CLIENT_SECRET, Setting.PANEL_OIDC_CLIENT_SECRET_FILE,
          Setting.PANEL_OIDC_REDIRECT_URI}) {
        if (!v.get(s.key).isBlank()) throw new ConfigException(s.key + " (env " + s.env + "): is set but panel.oidc.issuer is not");
      }
      if (!mappings.isEmpty()) throw new ConfigException(Setting.PANEL_OIDC_MAPPINGS.key + ": is set but panel.oidc.issuer is not");
      return OidcSettings.OFF;
    }
    url(Setting.PANEL_OIDC_ISSUER, issuer, false);
    if (issuer.endsWith("/")) issuer = issuer.substring(0, issuer.length() - 1);
    String clientId = v.get(Setting.PANEL_OIDC_CLIENT_ID.key).trim();
    if (clientId.isEmpty() || clientId.length() > 200 || !SCOPE.matcher(clientId).matches()) {
      throw bad(Setting.PANEL_OIDC_CLIENT_ID, clientId, "must be 1-200 printable characters (the client id registered at the IdP)");
    }
    String redirect = v.get(Setting.PANEL_OIDC_REDIRECT_URI.key).trim();
    url(Setting.PANEL_OIDC_REDIRECT_URI, redirect, true);
    if (!URI.create(redirect).getPath().endsWith("/api/v1/session/oidc/callback")) {
      throw bad(Setting.PANEL_OIDC_REDIRECT_URI, redirect, "must end with /api/v1/session/oidc/callback (the panel's callback)");
    }
    Set<String> scopes = new LinkedHashSet<>();
    scopes.add("openid");
    for (String part : v.get(Setting.PANEL_OIDC_SCOPES.key).split("[,\\s]+")) {
      if (part.isBlank()) continue;
      if (!SCOPE.matcher(part).matches()) throw bad(Setting.PANEL_OIDC_SCOPES, part, "is not a scope (printable, no quote or backslash)");
      scopes.add(part);
    }
    if (mappings.isEmpty()) {
      throw new ConfigException(Setting.PANEL_OIDC_MAPPINGS.key + " (env " + Setting.PANEL_OIDC_MAPPINGS.env
          + "): single sign-on needs at least one mapping from a claim to a role, or nobody could sign in");
    }
    String label = v.get(Setting.PANEL_OIDC_BUTTON_LABEL.key).trim();
    if (label.isEmpty() || label.length() > 60 || label.chars().anyMatch(Character::isISOControl)) {
      throw bad(Setting.PANEL_OIDC_BUTTON_LABEL, label, "must be 1-60 characters without control characters");
    }
    return new OidcSettings(issuer, clientId, secret(v), redirect, List.copyOf(scopes), mappings, label, timeout, maxPending);
  }

  /** The client secret: from {@code client_secret} (best through the environment) or from the file {@code client_secret_file}. */
  private static String secret(Map<String, String> v) {
    Setting direct = Setting.PANEL_OIDC_CLIENT_SECRET;
    Setting file = Setting.PANEL_OIDC_CLIENT_SECRET_FILE;
    String value = v.get(direct.key);
    String path = v.get(file.key).trim();
    if (!value.isEmpty() && !path.isEmpty()) {
      throw new ConfigException(direct.key + " and " + file.key + ": set one of them, not both");
    }
    if (!path.isEmpty()) {
      try {
        value = Files.readString(Path.of(path), StandardCharsets.UTF_8).strip();
      } catch (IOException | RuntimeException e) {
        throw new ConfigException(file.key + " (env " + file.env + "): cannot read " + path + ": " + e.getClass().getSimpleName());
      }
    }
    // never echoed: only its shape is reported
    if (value.isEmpty()) {
      throw new ConfigException(direct.key + " (env " + direct.env + ") or " + file.key + ": the client secret is missing");
    }
    if (value.length() > 1000 || value.chars().anyMatch(Character::isISOControl)) {
      throw new ConfigException(direct.key + ": the client secret must be 1-1000 characters without control characters");
    }
    return value;
  }

  private static List<OidcMapping> mappings(Map<String, String> v) {
    Setting s = Setting.PANEL_OIDC_MAPPINGS;
    String raw = v.get(s.key).trim();
    if (raw.isEmpty()) return List.of();
    JsonArray list;
    try {
      list = new JsonArray(raw);
    } catch (RuntimeException e) {
      throw new ConfigException(s.key + " (env " + s.env + "): must be a list of {claim, value, role, team, environment}");
    }
    List<OidcMapping> out = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      String at = s.key + "[" + i + "]";
      if (!(list.getValue(i) instanceof JsonObject m)) throw new ConfigException(at + ": must be {claim, value, role, team, environment}");
      for (String k : m.fieldNames()) {
        if (!MAPPING_KEYS.contains(k)) throw new ConfigException(at + "." + k + ": unknown key (claim, value, role, team, environment)");
      }
      String claim = text(m, "claim");
      if (claim == null || !CLAIM.matcher(claim).matches()) {
        throw new ConfigException(at + ".claim: must name a claim of the ID token (groups, or a dotted path such as realm_access.roles)");
      }
      String value = text(m, "value");
      if (value == null || value.isEmpty() || value.length() > 200) {
        throw new ConfigException(at + ".value: must be the claim's value to match, 1-200 characters ('*': any value)");
      }
      Role role = Role.parse(text(m, "role"));
      if (role == null) throw new ConfigException(at + ".role: must be admin, operator or viewer");
      String team = text(m, "team");
      if (team == null || !(team.equals("*") || SLUG.matcher(team).matches())) {
        throw new ConfigException(at + ".team: must be '*' or a team slug (a-z, 0-9, '-')");
      }
      String environment = text(m, "environment");
      if (environment == null || !(environment.equals("*") || SLUG.matcher(environment).matches())) {
        throw new ConfigException(at + ".environment: must be '*' or an environment slug (a-z, 0-9, '-')");
      }
      out.add(new OidcMapping(claim, value, role, team, environment));
    }
    return out;
  }

  private static String text(JsonObject m, String key) {
    Object o = m.getValue(key);
    return o == null ? null : String.valueOf(o).trim();
  }

  /** An absolute http(s) URL without a query or fragment; plain http only for loopback (tests, local trials). */
  private static void url(Setting s, String raw, boolean required) {
    if (raw.isEmpty() && !required) return;
    URI u;
    try {
      u = new URI(raw);
    } catch (URISyntaxException e) {
      throw bad(s, raw, "is not a URL");
    }
    boolean https = "https".equals(u.getScheme());
    boolean loopbackHttp = "http".equals(u.getScheme()) && u.getHost() != null
        && (u.getHost().equals("localhost") || u.getHost().startsWith("127.") || u.getHost().equals("[::1]"));
    if (!(https || loopbackHttp) || u.getHost() == null || u.getRawQuery() != null || u.getRawFragment() != null || u.getUserInfo() != null) {
      throw bad(s, raw, "must be an https:// URL without query or fragment (plain http only on loopback)");
    }
  }

  private static ConfigException bad(Setting s, String value, String why) {
    return new ConfigException(s.key + " (env " + s.env + "): '" + value + "' " + why);
  }
}
