package io.meshplane.auth;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.JWTOptions;
import io.vertx.ext.auth.PubSecKeyOptions;
import io.vertx.ext.auth.authentication.TokenCredentials;
import io.vertx.ext.auth.jwt.JWTAuth;
import io.vertx.ext.auth.jwt.JWTAuthOptions;
import java.math.BigInteger;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Set;

/**
 * Mints and checks the signatures of this mesh's JWTs. ES256 only: the verifier holds nothing but
 * ES256 public keys, and {@link TokenVerifier} refuses any header whose {@code alg} is not ES256 or
 * whose {@code kid} is unknown before the signature is even looked at (no {@code none}, no HS256 made
 * with a public key). Claims ({@code iss}, {@code aud}, {@code exp}, {@code nbf}) are checked by the verifier.
 */
final class Jwts {
  public static final String ALGORITHM = "ES256";

  private final JWTAuth signer;
  private final JWTAuth verifier;
  private final String signingKid;
  private final Set<String> kids;
  private final String issuer;
  private final String audience;

  /** @param issuer {@code auth.issuer}: the {@code iss} of this mesh's tokens */
  public Jwts(Vertx vertx, SigningKeys keys, String issuer) {
    this.signingKid = keys.signingKid();
    this.kids = Set.copyOf(keys.publicPems().keySet());
    this.issuer = issuer;
    this.audience = audienceOf(issuer);
    this.signer = JWTAuth.create(vertx, new JWTAuthOptions()
        .addPubSecKey(new PubSecKeyOptions().setAlgorithm(ALGORITHM).setId(signingKid).setBuffer(keys.signingPem())));
    JWTAuthOptions verify = new JWTAuthOptions()
        // exp/nbf/iss/aud are checked by TokenVerifier, which tells "expired" apart from "invalid"
        .setJWTOptions(new JWTOptions().setIgnoreExpiration(true).setLeeway(5));
    keys.publicPems().forEach((kid, pem) -> verify.addPubSecKey(new PubSecKeyOptions().setAlgorithm(ALGORITHM).setId(kid).setBuffer(pem)));
    this.verifier = JWTAuth.create(vertx, verify);
  }

  /** The audience of coordinator API tokens: distinct from the issuer so a token minted for something else does not fit. */
  public static String audienceOf(String issuer) {
    return issuer + "/v1";
  }

  /** Signs the claims of one token. The JWT is shown once and never stored. */
  public String mint(String tokenId, String subject, String name, Scope scope, Instant expires, Instant issuedAt) {
    JsonObject claims = new JsonObject()
        .put("iss", issuer)
        .put("aud", audience)
        .put("sub", subject)
        .put("jti", tokenId)
        .put("iat", issuedAt.getEpochSecond())
        .put("nbf", issuedAt.getEpochSecond())
        .put("exp", expires.getEpochSecond())
        .put("name", name)
        .put("team", scope.team())
        .put("env", scope.environment())
        .put("srf", scope.surface().wire);
    return lowS(signer.generateToken(claims, new JWTOptions().setAlgorithm(ALGORITHM).setNoTimestamp(true)
        .setHeader(new JsonObject().put("kid", signingKid))));
  }

  /** The order n of the P-256 group. */
  static final BigInteger P256_ORDER = new BigInteger("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16);
  private static final BigInteger HALF_ORDER = P256_ORDER.shiftRight(1);

  /**
   * The one spelling of an ES256 signature this mesh accepts (RFC 7518 §3.4): the raw 64 bytes
   * {@code r || s}, with {@code 0 < r < n} and {@code 0 < s <= n/2}. ECDSA verifies {@code (r, s)} and
   * {@code (r, n - s)} alike, and the JWT library also takes a DER encoding: without this rule one
   * token would have three spellings, each verified and cached on its own.
   */
  static boolean canonicalSignature(byte[] sig) {
    if (sig.length != 64) return false;
    BigInteger r = new BigInteger(1, Arrays.copyOfRange(sig, 0, 32));
    BigInteger s = new BigInteger(1, Arrays.copyOfRange(sig, 32, 64));
    return r.signum() > 0 && r.compareTo(P256_ORDER) < 0 && s.signum() > 0 && s.compareTo(HALF_ORDER) <= 0;
  }

  /** Rewrites a freshly signed JWT's signature to its low-S form ({@code s -> n - s} when s > n/2), which verifies the same. */
  static String lowS(String jwt) {
    int dot = jwt.lastIndexOf('.');
    byte[] sig = Base64.getUrlDecoder().decode(jwt.substring(dot + 1));
    if (sig.length != 64) throw new IllegalStateException("ES256 signature of " + sig.length + " bytes, expected 64");
    BigInteger s = new BigInteger(1, Arrays.copyOfRange(sig, 32, 64));
    if (s.compareTo(HALF_ORDER) <= 0) return jwt;
    byte[] low = P256_ORDER.subtract(s).toByteArray();
    byte[] out = Arrays.copyOf(sig, 64);
    Arrays.fill(out, 32, 64, (byte) 0);
    // toByteArray is big-endian, possibly shorter than 32 bytes (or with a leading sign byte): right-align it
    int len = Math.min(low.length, 32);
    System.arraycopy(low, low.length - len, out, 64 - len, len);
    return jwt.substring(0, dot + 1) + Base64.getUrlEncoder().withoutPadding().encodeToString(out);
  }

  /** Verifies the signature; completes with the claims. */
  Future<JsonObject> verifySignature(String jwt) {
    // Vert.x keeps the decoded claims under attributes.accessToken (the principal holds the raw token).
    // It can throw instead of failing the future (e.g. on a null "exp"): both become a failed future.
    try {
      return verifier.authenticate(new TokenCredentials(jwt)).map(user -> user.attributes().getJsonObject("accessToken"));
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
  }

  boolean knowsKid(String kid) {
    return kids.contains(kid);
  }

  String issuer() {
    return issuer;
  }

  String audience() {
    return audience;
  }

  List<String> kids() {
    return List.copyOf(kids);
  }
}
