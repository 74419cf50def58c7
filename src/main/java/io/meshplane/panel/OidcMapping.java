package io.meshplane.panel;

import io.meshplane.access.Role;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * One rule of {@code panel.oidc.mappings}: when the ID token's claim {@code claim} holds {@code value}
 * (a string claim equal to it, or a list claim containing it; {@code "*"}: the claim is present with
 * any value), the person signs in with {@code role} on {@code team} and {@code environment}. The rules
 * are tried in order and the first that matches wins; none matching refuses the login.
 *
 * @param claim a claim name, or a dotted path into nested objects ({@code realm_access.roles})
 */
public record OidcMapping(String claim, String value, Role role, String team, String environment) {

  /** True when the claims hold this rule's value. */
  boolean matches(JsonObject claims) {
    Object v = claim(claims, claim);
    if (v == null) return false;
    if (value.equals("*")) return true;
    if (v instanceof JsonArray list) {
      for (Object o : list) {
        if (o != null && value.equals(String.valueOf(o))) return true;
      }
      return false;
    }
    if (v instanceof JsonObject) return false;
    return value.equals(String.valueOf(v));
  }

  /** The value at a dotted path, or null. */
  static Object claim(JsonObject claims, String path) {
    Object at = claims;
    for (String part : path.split("\\.")) {
      if (!(at instanceof JsonObject o)) return null;
      at = o.getValue(part);
    }
    return at;
  }
}
