package io.meshplane.panel;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Set;

/**
 * The ID token's checks (OpenID Connect Core §3.1.3.7), on values. vertx-auth-oauth2 verifies the
 * signature with the IdP's published keys and the issuer and audience when they are present, and
 * silently leaves out a token it cannot verify; what it does not check is checked here: the token
 * must be there and verified, signed with a pinned algorithm (RS256 or ES256: never {@code none},
 * never an HMAC keyed with something public), issued by the discovered issuer to this client (an
 * audience is required; several audiences need {@code azp} = this client), not expired, not issued
 * in the future, and carrying the nonce of this login (which makes a token from another login, or a
 * replayed one, useless).
 */
final class IdTokenCheck {
  static final Set<String> ALGORITHMS = Set.of("RS256", "ES256");
  static final long LEEWAY_S = 30;

  /** Why a token was refused: a short code (for the audit trail and the login page), never the token. */
  static final class Invalid extends Exception {
    final String reason;

    Invalid(String reason) {
      super("the ID token is refused: " + reason, null, false, false);
      this.reason = reason;
    }
  }

  private IdTokenCheck() {}

  /**
   * The verified claims, or {@link Invalid}.
   *
   * @param rawIdToken the token as the IdP sent it (null: none was sent)
   * @param verified the claims the library verified the signature of (null: it could not)
   */
  static JsonObject check(String rawIdToken, JsonObject verified, String issuer, String clientId, String nonce, long nowSeconds)
      throws Invalid {
    if (rawIdToken == null) throw new Invalid("no ID token in the IdP's answer");
    if (verified == null) throw new Invalid("signature not verified with the IdP's keys");
    String alg = algorithm(rawIdToken);
    if (alg == null || !ALGORITHMS.contains(alg)) throw new Invalid("algorithm " + (alg == null ? "missing" : alg) + " is not RS256 or ES256");
    if (!issuer.equals(verified.getValue("iss"))) throw new Invalid("issuer is not " + issuer);
    Object aud = verified.getValue("aud");
    JsonArray audiences = aud instanceof String s ? new JsonArray().add(s) : aud instanceof JsonArray a ? a : null;
    if (audiences == null || !audiences.contains(clientId)) throw new Invalid("audience does not include this client");
    Object azp = verified.getValue("azp");
    if ((audiences.size() > 1 || azp != null) && !clientId.equals(azp)) throw new Invalid("authorized party is not this client");
    long exp = seconds(verified, "exp");
    if (exp < 0) throw new Invalid("no expiry");
    if (exp + LEEWAY_S <= nowSeconds) throw new Invalid("expired");
    long iat = seconds(verified, "iat");
    if (iat < 0 || iat > nowSeconds + LEEWAY_S) throw new Invalid("issued-at missing or in the future");
    Object n = verified.getValue("nonce");
    if (!(n instanceof String got) || !MessageDigest.isEqual(got.getBytes(StandardCharsets.UTF_8), nonce.getBytes(StandardCharsets.UTF_8))) {
      throw new Invalid("nonce does not match this login");
    }
    Object sub = verified.getValue("sub");
    if (!(sub instanceof String subject) || subject.isEmpty() || subject.length() > 255) throw new Invalid("no subject");
    return verified;
  }

  /** The {@code alg} of a compact JWS's header, or null. */
  static String algorithm(String compact) {
    int dot = compact.indexOf('.');
    if (dot <= 0) return null;
    try {
      JsonObject header = new JsonObject(new String(Base64.getUrlDecoder().decode(compact.substring(0, dot)), StandardCharsets.UTF_8));
      return header.getValue("alg") instanceof String s ? s : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  private static long seconds(JsonObject claims, String name) {
    return claims.getValue(name) instanceof Number n ? n.longValue() : -1;
  }
}
