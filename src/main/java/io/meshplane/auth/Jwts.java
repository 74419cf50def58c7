package io.meshplane.auth;

import io.meshplane.app.MeshConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.JWTOptions;
import io.vertx.ext.auth.PubSecKeyOptions;
import io.vertx.ext.auth.authentication.TokenCredentials;
import io.vertx.ext.auth.jwt.JWTAuth;
import io.vertx.ext.auth.jwt.JWTAuthOptions;
import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * Mints and checks the signatures of this mesh's JWTs. ES256 only: the verifier holds nothing but
 * ES256 public keys, and {@link TokenVerifier} refuses any header whose {@code alg} is not ES256 or
 * whose {@code kid} is unknown before the signature is even looked at (no {@code none}, no HS256 made
 * with a public key). Claims ({@code iss}, {@code aud}, {@code exp}, {@code nbf}) are checked by the verifier.
 */
public final class Jwts {
  public static final String ALGORITHM = "ES256";

  private final JWTAuth signer;
  private final JWTAuth verifier;
  private final String signingKid;
  private final Set<String> kids;
  private final String issuer;
  private final String audience;

  public Jwts(Vertx vertx, SigningKeys keys, MeshConfig config) {
    this.signingKid = keys.signingKid();
    this.kids = Set.copyOf(keys.publicPems().keySet());
    this.issuer = config.issuer();
    this.audience = audienceOf(config.issuer());
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
    return signer.generateToken(claims, new JWTOptions().setAlgorithm(ALGORITHM).setNoTimestamp(true)
        .setHeader(new JsonObject().put("kid", signingKid)));
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
