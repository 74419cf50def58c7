package io.meshplane.auth;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.common.Refusal;
import io.meshplane.http.Cursors;
import io.meshplane.common.Ids;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Page;
import io.meshplane.http.Params;
import io.meshplane.http.Responses;
import io.meshplane.common.Times;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.Instant;

/** {@code /v1/auth}: the token endpoints of SPEC §3. */
public final class TokenRoutes {
  private TokenRoutes() {}

  public static void mount(SecuredRoutes api, TokenService tokens, TokenVerifier verifier, Cursors cursors) {
    api.route(POST, "/v1/auth/tokens", Permission.TOKENS_WRITE, "token.create", null, (ctx, caller) ->
        tokens.create(ctx, caller, JsonBodies.required(ctx)).map(issued -> {
          ctx.response().putHeader("Location", "/v1/auth/tokens/" + issued.record().id());
          Responses.json(ctx, 201, created(issued));
          return null;
        }));

    api.route(GET, "/v1/auth/tokens", Permission.TOKENS_READ, "token.list", null, (ctx, caller) -> {
      Page page = Page.from(ctx, cursors, "tokens");
      boolean includeRevoked = Params.flag(ctx, "include_revoked");
      return tokens.list(caller, includeRevoked, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });

    api.route(GET, "/v1/auth/tokens/{id}", Permission.TOKENS_READ, "token.read", "token", (ctx, caller) ->
        tokens.get(caller, tokenId(ctx)).map(t -> {
          Responses.ok(ctx, t.toJson(tokens.lastUse(t)));
          return null;
        }));

    api.route(DELETE, "/v1/auth/tokens/{id}", Permission.TOKENS_WRITE, "token.revoke", "token", (ctx, caller) ->
        tokens.revoke(ctx, caller, tokenId(ctx)).map(v -> {
          Responses.noContent(ctx);
          return null;
        }));

    api.route(POST, "/v1/auth/tokens/{id}/rotate", Permission.TOKENS_WRITE, "token.rotate", "token", (ctx, caller) ->
        tokens.rotate(ctx, caller, tokenId(ctx), JsonBodies.required(ctx)).map(r -> {
          ctx.response().putHeader("Location", "/v1/auth/tokens/" + r.issued().record().id());
          Responses.json(ctx, 201, created(r.issued()).put("old", new JsonObject()
              .put("id", r.old().id()).put("expires", Times.format(r.old().effectiveExpiry()))));
          return null;
        }));

    // Scripts call whoami often (health checks of their own credentials): the answer depends only on
    // the token and its effective expiry, so it is encoded once per token and expiry.
    Cache<String, Buffer> whoami = Caffeine.newBuilder().maximumSize(10_000).expireAfterWrite(Duration.ofMinutes(1))
        .executor(Runnable::run).build();
    api.anyValidToken(GET, "/v1/auth/whoami", "token.whoami", (ctx, caller) -> {
      long expires = verifier.effectiveExpiry(caller);
      Buffer body = whoami.get(caller.tokenId() + "@" + expires, k -> new JsonObject()
          .put("token_id", caller.tokenId())
          .put("name", caller.name())
          .put("scope", caller.scope().toJson())
          .put("permissions", new JsonArray(caller.permissionNames()))
          .put("expires", Times.format(Instant.ofEpochMilli(expires)))
          .put("node_id", caller.nodeId())
          .toBuffer());
      ctx.response().putHeader("Content-Type", "application/json").end(body);
      return Future.succeededFuture();
    });
  }

  private static JsonObject created(TokenIssuer.Issued issued) {
    TokenRecord t = issued.record();
    return new JsonObject()
        .put("id", t.id())
        .put("name", t.name())
        .put("scope", t.scope().toJson())
        .put("expires", Times.format(t.expiresAt()))
        .put("created_at", Times.format(t.createdAt()))
        .put("created_by", t.createdBy())
        .put("token", issued.jwt());
  }

  /** A token id from the path; one that cannot be an id is simply not found. */
  private static String tokenId(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (!Ids.looksLike("tok", id)) throw Refusal.notFound("no token " + id);
    return id;
  }

}
