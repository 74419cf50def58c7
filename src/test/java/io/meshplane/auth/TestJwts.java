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
    // low-S, as a compliant ES256 signer makes it: the cases built on this break one other thing only
    return Jwts.lowS(signingInput + "." + B64.encodeToString(s.sign()));
  }

  static String hs256(byte[] secret, JsonObject header, JsonObject claims) throws Exception {
    String signingInput = b64(header) + "." + b64(claims);
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(secret, "HmacSHA256"));
    return signingInput + "." + B64.encodeToString(mac.doFinal(signingInput.getBytes(StandardCharsets.US_ASCII)));
  }

  /** The same signature as ASN.1 DER (SEQUENCE of two INTEGERs), the form JCA's plain SHA256withECDSA makes. */
  static String derSpelling(String jwt) {
    int dot = jwt.lastIndexOf('.');
    byte[] raw = Base64.getUrlDecoder().decode(jwt.substring(dot + 1));
    byte[] r = new java.math.BigInteger(1, java.util.Arrays.copyOfRange(raw, 0, 32)).toByteArray();
    byte[] s = new java.math.BigInteger(1, java.util.Arrays.copyOfRange(raw, 32, 64)).toByteArray();
    byte[] der = new byte[6 + r.length + s.length];
    der[0] = 0x30;
    der[1] = (byte) (4 + r.length + s.length);
    der[2] = 0x02;
    der[3] = (byte) r.length;
    System.arraycopy(r, 0, der, 4, r.length);
    der[4 + r.length] = 0x02;
    der[5 + r.length] = (byte) s.length;
    System.arraycopy(s, 0, der, 6 + r.length, s.length);
    return jwt.substring(0, dot + 1) + B64.encodeToString(der);
  }

  /** The twin signature (r, n - s), which ECDSA verifies as well. */
  static String highLowTwin(String jwt) {
    int dot = jwt.lastIndexOf('.');
    byte[] raw = Base64.getUrlDecoder().decode(jwt.substring(dot + 1));
    java.math.BigInteger s = new java.math.BigInteger(1, java.util.Arrays.copyOfRange(raw, 32, 64));
    byte[] twin = Jwts.P256_ORDER.subtract(s).toByteArray();
    byte[] out = java.util.Arrays.copyOf(raw, 64);
    java.util.Arrays.fill(out, 32, 64, (byte) 0);
    int len = Math.min(twin.length, 32);
    System.arraycopy(twin, twin.length - len, out, 64 - len, len);
    return jwt.substring(0, dot + 1) + B64.encodeToString(out);
  }

  /** True when the token's ES256 signature has s <= n/2. */
  static boolean lowS(String jwt) {
    byte[] raw = Base64.getUrlDecoder().decode(jwt.substring(jwt.lastIndexOf('.') + 1));
    return raw.length == 64 && new java.math.BigInteger(1, java.util.Arrays.copyOfRange(raw, 32, 64))
        .compareTo(Jwts.P256_ORDER.shiftRight(1)) <= 0;
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
