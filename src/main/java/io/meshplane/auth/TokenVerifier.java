package io.meshplane.auth;

import io.meshplane.access.Authenticator;
import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Grants;
import io.meshplane.access.Surface;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.observe.MeshMetrics;
import io.micrometer.core.instrument.Counter;
import io.vertx.core.Future;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The way in for bearer tokens ({@code /v1}): turns an {@code Authorization} header into a
 * {@link Caller} (a token, or a node for an agent token), or a 401 with the right code.
 *
 * <p>Hot path: a token seen before is found in a bounded cache (expired ones are dropped), so the
 * ECDSA check runs once per token, not once per request. Every request still checks the expiry and the
 * cluster-wide {@link Denylist} (a local memory read). No I/O per request.
 */
final class TokenVerifier implements Authenticator {
  private static final int MAX_TOKEN_LENGTH = 4096;
  private static final long LEEWAY_SECONDS = 5;
  static final int MAX_CACHED = 1_000_000;
  /** The one spelling a JWT segment may have (see {@link #decodeCanonical}). */
  private static final Base64.Encoder CANONICAL = Base64.getUrlEncoder().withoutPadding();

  private final Jwts jwts;
  private final Denylist denylist;
  private final TokenUsage usage;
  /** Tokens whose signature was checked (see {@link VerifiedTokens}: sized for a whole fleet's agents). */
  private final VerifiedTokens cache = new VerifiedTokens(MAX_CACHED);
  private final Map<String, Counter> failures = new HashMap<>();

  public TokenVerifier(Jwts jwts, Denylist denylist, TokenUsage usage, MeshMetrics metrics) {
    this.jwts = jwts;
    this.denylist = denylist;
    this.usage = usage;
    for (String reason : new String[] {"missing", "malformed", "bad_algorithm", "unknown_key", "bad_signature",
        "wrong_issuer", "wrong_audience", "invalid_claims", "not_yet_valid", "expired", "revoked"}) {
      failures.put(reason, metrics.authFailure(reason));
    }
  }

  /** Exactly one {@code Authorization} header: two are one ambiguous credential, refused (401), never resolved by picking one. */
  @Override
  public Future<Caller> authenticate(HttpServerRequest request) {
    List<String> headers = request.headers().getAll(HttpHeaders.AUTHORIZATION);
    if (headers.size() > 1) return fail("malformed", Refusal.unauthenticated("send one Authorization header, not " + headers.size()));
    return verifyHeader(headers.isEmpty() ? null : headers.get(0));
  }

  @Override
  public Caller attributable(HttpServerRequest request) {
    List<String> headers = request.headers().getAll(HttpHeaders.AUTHORIZATION);
    return headers.size() == 1 ? attributable(headers.get(0)) : null;
  }

  /** Verifies a request's {@code Authorization} header value. */
  public Future<Caller> verifyHeader(String authorization) {
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return fail("missing", Refusal.unauthenticated("an Authorization: Bearer <token> header is required"));
    }
    return verify(authorization.substring(7).trim());
  }

  public Future<Caller> verify(String jwt) {
    Caller cached = cache.get(jwt);
    if (cached != null) return admit(cached);
    if (jwt.isEmpty() || jwt.length() > MAX_TOKEN_LENGTH) return fail("malformed", Refusal.unauthenticated("the bearer token is not a JWT"));
    String[] parts = jwt.split("\\.", -1);
    if (parts.length != 3 || !canonical(parts[2])) return fail("malformed", Refusal.unauthenticated("the bearer token is not a JWT"));
    if (!Jwts.canonicalSignature(decodeCanonical(parts[2]))) {
      return fail("bad_signature", Refusal.unauthenticated("the token's signature is not valid"));
    }
    JsonObject header;
    try {
      header = new JsonObject(new String(decodeCanonical(parts[0]), StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      return fail("malformed", Refusal.unauthenticated("the bearer token is not a JWT"));
    }
    // Pin the algorithm before anything else: no "none", no HMAC keyed with a public key.
    if (!Jwts.ALGORITHM.equals(header.getValue("alg"))) {
      return fail("bad_algorithm", Refusal.unauthenticated("the token's algorithm is not accepted"));
    }
    Object kid = header.getValue("kid");
    if (!(kid instanceof String k) || !jwts.knowsKid(k)) {
      return fail("unknown_key", Refusal.unauthenticated("the token was not signed by a key of this mesh"));
    }
    // Claims that must be numbers are checked before the library sees them (it trusts their types).
    JsonObject payload;
    try {
      payload = new JsonObject(new String(decodeCanonical(parts[1]), StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      return fail("malformed", Refusal.unauthenticated("the bearer token is not a JWT"));
    }
    for (String claim : new String[] {"exp", "nbf", "iat"}) {
      Object v = payload.getValue(claim);
      if ((v == null && claim.equals("exp")) || (v != null && !(v instanceof Number))) {
        return fail("invalid_claims", Refusal.unauthenticated("the token's claims are not valid"));
      }
    }
    return jwts.verifySignature(jwt)
        .recover(t -> fail("bad_signature", Refusal.unauthenticated("the token's signature is not valid")))
        .compose(claims -> {
          Caller p;
          try {
            p = fromClaims(claims);
          } catch (Refusal e) {
            return Future.failedFuture(e);
          }
          remember(jwt, p);
          return admit(p);
        });
  }

  /**
   * A JWT segment in its one valid form: unpadded base64url whose unused trailing bits are zero (RFC 7515
   * §2). Java's decoder also accepts padding and ignores those bits, so without this check one token would
   * have several spellings, each verified and cached on its own.
   */
  private static byte[] decodeCanonical(String segment) {
    byte[] bytes = Base64.getUrlDecoder().decode(segment);
    if (!CANONICAL.encodeToString(bytes).equals(segment)) throw new IllegalArgumentException("not canonical base64url");
    return bytes;
  }

  private static boolean canonical(String segment) {
    try {
      decodeCanonical(segment);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private Caller fromClaims(JsonObject c) {
    if (!jwts.issuer().equals(c.getValue("iss"))) throw failNow("wrong_issuer", Refusal.unauthenticated("the token was issued for another mesh"));
    Object aud = c.getValue("aud");
    boolean audOk = jwts.audience().equals(aud) || (aud instanceof JsonArray a && a.contains(jwts.audience()));
    if (!audOk) throw failNow("wrong_audience", Refusal.unauthenticated("the token is not meant for this API"));
    long nowSec = System.currentTimeMillis() / 1000;
    if (!(c.getValue("exp") instanceof Number exp)) throw failNow("invalid_claims", Refusal.unauthenticated("the token has no expiry"));
    if (c.getValue("nbf") instanceof Number nbf && nbf.longValue() > nowSec + LEEWAY_SECONDS) {
      throw failNow("not_yet_valid", Refusal.unauthenticated("the token is not valid yet"));
    }
    String jti = c.getValue("jti") instanceof String s ? s : null;
    String team = c.getValue("team") instanceof String s ? s : null;
    String env = c.getValue("env") instanceof String s ? s : null;
    Surface surface = c.getValue("srf") instanceof String s ? Surface.parse(s) : null;
    String name = c.getValue("name") instanceof String s ? s : "";
    String sub = c.getValue("sub") instanceof String s ? s : null;
    if (!Ids.looksLike("tok", jti) || surface == null || !validScopePart(team) || !validScopePart(env)) {
      throw failNow("invalid_claims", Refusal.unauthenticated("the token's claims are not valid"));
    }
    String nodeId = surface == Surface.AGENT ? sub : null;
    if (surface == Surface.AGENT && !Ids.looksLike("nd", nodeId)) {
      throw failNow("invalid_claims", Refusal.unauthenticated("the token's claims are not valid"));
    }
    // an agent token acts as its node (the audit trail names the node); any other as the token itself
    return surface == Surface.AGENT
        ? new Caller(Caller.Kind.NODE, nodeId, name, new Boundary(team, env), Grants.of(surface), jti, exp.longValue() * 1000)
        : new Caller(Caller.Kind.TOKEN, jti, name, new Boundary(team, env), Grants.of(surface), jti, exp.longValue() * 1000);
  }

  private void remember(String jwt, Caller p) {
    cache.put(jwt, p);
  }

  private static boolean validScopePart(String s) {
    return Boundary.ALL.equals(s) || Fields.isSlug(s);
  }

  /** The checks every request makes, cached or not: expiry and the cluster-wide denylist. */
  private Future<Caller> admit(Caller p) {
    long now = System.currentTimeMillis();
    if (now >= p.expiresAtMillis()) {
      // kept in the cache: an agent retrying an expired credential is refused from it, with no
      // signature check each time (the cache drops expired entries first when it reaches its bound)
      return fail("expired", new Refusal(Refusal.Kind.UNAUTHENTICATED, "token_expired", "the token has expired"));
    }
    Denylist.Entry denied = denylist.lookup(p.credential());
    if (denied != null) {
      if (denied.revoked()) return fail("revoked", new Refusal(Refusal.Kind.UNAUTHENTICATED, "token_revoked", "the token has been revoked"));
      if (now >= denied.notAfterMillis()) return fail("expired", new Refusal(Refusal.Kind.UNAUTHENTICATED, "token_expired", "the token was retired by a rotation"));
    }
    // Agent tokens are never shown through the API (their last use is the node's heartbeat): recording
    // them would cost one tokens-row write per heartbeat, a fleet's whole heartbeat rate in PostgreSQL.
    if (p.kind() == Caller.Kind.TOKEN) usage.touch(p.credential(), now);
    return Future.succeededFuture(p);
  }

  /** The effective expiry: the token's own, or earlier when a rotation retires it. */
  public long effectiveExpiry(Caller p) {
    Denylist.Entry d = denylist.lookup(p.credential());
    return d == null ? p.expiresAtMillis() : Math.min(p.expiresAtMillis(), d.notAfterMillis());
  }

  /**
   * The caller of a token whose signature is valid but that is expired or revoked, for auditing
   * the attempt; null when the token cannot be attributed to anyone.
   */
  public Caller attributable(String authorization) {
    if (authorization == null || authorization.length() < 8) return null;
    return cache.get(authorization.substring(7).trim());
  }

  private <T> Future<T> fail(String reason, Refusal error) {
    failures.get(reason).increment();
    return Future.failedFuture(error);
  }

  private Refusal failNow(String reason, Refusal error) {
    failures.get(reason).increment();
    return error;
  }
}
