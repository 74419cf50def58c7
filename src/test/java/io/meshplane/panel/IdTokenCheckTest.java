package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/**
 * The ID token checks that vertx-auth-oauth2 leaves to the panel (the signature itself is verified by
 * the library against Keycloak's keys in {@link OidcKeycloakTest}): the token is there and verified, a
 * pinned algorithm, issuer, audience, authorized party, expiry, issue time and, above all, the nonce.
 */
class IdTokenCheckTest {
  static final String ISSUER = "https://idp.example.net/realms/mesh";
  static final String CLIENT = "meshplane-panel";
  static final String NONCE = "n-0S6_WzA2Mj";
  static final long NOW = 1_800_000_000L;

  static String token(String alg) {
    Base64.Encoder b = Base64.getUrlEncoder().withoutPadding();
    return b.encodeToString(new JsonObject().put("alg", alg).put("kid", "k1").encode().getBytes(StandardCharsets.UTF_8)) + ".e30.c2ln";
  }

  static JsonObject claims() {
    return new JsonObject().put("iss", ISSUER).put("aud", CLIENT).put("azp", CLIENT).put("sub", "f1a2").put("exp", NOW + 300)
        .put("iat", NOW - 5).put("nonce", NONCE).put("groups", new JsonArray().add("mesh-admins"));
  }

  static JsonObject without(String claim) {
    JsonObject c = claims();
    c.remove(claim);
    return c;
  }

  static String refused(String raw, JsonObject verified, String nonce) {
    return assertThrows(IdTokenCheck.Invalid.class, () -> IdTokenCheck.check(raw, verified, ISSUER, CLIENT, nonce, NOW)).reason;
  }

  @Test
  void aGoodTokenPasses() throws Exception {
    assertEquals("f1a2", IdTokenCheck.check(token("RS256"), claims(), ISSUER, CLIENT, NONCE, NOW).getString("sub"));
    assertEquals("f1a2", IdTokenCheck.check(token("ES256"), claims().put("aud", new JsonArray().add(CLIENT)), ISSUER, CLIENT, NONCE, NOW)
        .getString("sub"));
  }

  @Test
  void theNonceMustBeThisLogins() {
    assertEquals("nonce does not match this login", refused(token("RS256"), claims(), "another-login-nonce"));
    assertEquals("nonce does not match this login", refused(token("RS256"), claims().put("nonce", (String) null), NONCE));
  }

  @Test
  void everyOtherCheckRefuses() {
    assertEquals("no ID token in the IdP's answer", refused(null, null, NONCE));
    assertEquals("signature not verified with the IdP's keys", refused(token("RS256"), null, NONCE));
    assertEquals("algorithm none is not RS256 or ES256", refused(token("none"), claims(), NONCE));
    assertEquals("algorithm HS256 is not RS256 or ES256", refused(token("HS256"), claims(), NONCE));
    assertEquals("algorithm missing is not RS256 or ES256", refused("garbage", claims(), NONCE));
    assertEquals("issuer is not " + ISSUER, refused(token("RS256"), claims().put("iss", ISSUER + "/"), NONCE));
    assertEquals("audience does not include this client", refused(token("RS256"), claims().put("aud", "other"), NONCE));
    assertEquals("audience does not include this client", refused(token("RS256"), claims().put("aud", (String) null), NONCE));
    assertEquals("authorized party is not this client", refused(token("RS256"),
        claims().put("aud", new JsonArray().add(CLIENT).add("other")).put("azp", (String) null), NONCE));
    assertEquals("authorized party is not this client", refused(token("RS256"), claims().put("azp", "other"), NONCE));
    assertEquals("expired", refused(token("RS256"), claims().put("exp", NOW - IdTokenCheck.LEEWAY_S), NONCE));
    assertEquals("no expiry", refused(token("RS256"), without("exp"), NONCE));
    assertEquals("issued-at missing or in the future", refused(token("RS256"), claims().put("iat", NOW + 120), NONCE));
    assertEquals("no subject", refused(token("RS256"), claims().put("sub", ""), NONCE));
  }

  @Test
  void theFirstMatchingMappingWins() {
    OidcSettings s = new OidcSettings(ISSUER, CLIENT, "x", "https://p/api/v1/session/oidc/callback", java.util.List.of("openid"),
        java.util.List.of(new OidcMapping("groups", "mesh-viewers", io.meshplane.access.Role.VIEWER, "web", "*"),
            new OidcMapping("groups", "mesh-admins", io.meshplane.access.Role.ADMIN, "*", "*"),
            new OidcMapping("realm_access.roles", "ops", io.meshplane.access.Role.OPERATOR, "web", "prod"),
            new OidcMapping("email_verified", "true", io.meshplane.access.Role.VIEWER, "all", "*")), "SSO", java.time.Duration.ofSeconds(1), 100);
    assertEquals(io.meshplane.access.Role.ADMIN, s.map(claims()).role());
    assertEquals(io.meshplane.access.Role.VIEWER, s.map(claims().put("groups", new JsonArray().add("mesh-admins").add("mesh-viewers"))).role());
    assertEquals(io.meshplane.access.Role.OPERATOR, s.map(new JsonObject().put("realm_access", new JsonObject()
        .put("roles", new JsonArray().add("ops")))).role());
    assertEquals("all", s.map(new JsonObject().put("email_verified", true)).team());
    assertEquals(null, s.map(new JsonObject().put("groups", "mesh-admin")));
    assertEquals(null, s.map(new JsonObject()));
  }
}
