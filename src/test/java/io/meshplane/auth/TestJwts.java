package io.meshplane.auth;

import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.security.KeyFactory;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Hand-made JWTs for attacking the verifier: forged, tampered, mis-addressed, expired. Plain JCA, no shortcuts. */
final class TestJwts {
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

  private TestJwts() {}

  static String b64(JsonObject o) {
    return B64.encodeToString(o.encode().getBytes(StandardCharsets.UTF_8));
  }

  static PrivateKey privateKey(SigningKeys keys) throws Exception {
    String body = keys.signingPem().replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
    return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
  }

  static PrivateKey strangerKey() throws Exception {
    KeyPairGenerator gen = KeyPairGenerator.getInstance("EC");
    gen.initialize(new ECGenParameterSpec("secp256r1"));
    return gen.generateKeyPair().getPrivate();
  }

  static String es256(PrivateKey key, JsonObject header, JsonObject claims) throws Exception {
    String signingInput = b64(header) + "." + b64(claims);
    Signature s = Signature.getInstance("SHA256withECDSAinP1363Format");
    s.initSign(key);
    s.update(signingInput.getBytes(StandardCharsets.US_ASCII));
    return signingInput + "." + B64.encodeToString(s.sign());
  }

  static String hs256(byte[] secret, JsonObject header, JsonObject claims) throws Exception {
    String signingInput = b64(header) + "." + b64(claims);
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(secret, "HmacSHA256"));
    return signingInput + "." + B64.encodeToString(mac.doFinal(signingInput.getBytes(StandardCharsets.US_ASCII)));
  }

  static String unsigned(JsonObject claims, String kid) {
    return b64(new JsonObject().put("alg", "none").put("kid", kid).put("typ", "JWT")) + "." + b64(claims) + ".";
  }

  /** Valid claims for a '*' admin token with the given id; callers break one thing at a time. */
  static JsonObject claims(String issuer, String tokenId, long expEpochSeconds) {
    long now = System.currentTimeMillis() / 1000;
    return new JsonObject().put("iss", issuer).put("aud", Jwts.audienceOf(issuer)).put("sub", tokenId).put("jti", tokenId)
        .put("iat", now).put("nbf", now).put("exp", expEpochSeconds).put("name", "forged")
        .put("team", "*").put("env", "*").put("srf", "admin");
  }
}
