package io.meshplane.auth;

import static io.vertx.core.http.HttpMethod.DELETE;
import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.POST;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.meshplane.access.Permission;
import io.meshplane.access.Surface;
import io.meshplane.common.Durations;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.Times;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Params;
import io.meshplane.http.Responses;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.stream.Collectors;

/** The token endpoints of API.md §5 ({@code /auth/…} under an API): parsing here, rules in {@link TokenService}. */
final class TokenRoutes {
  private TokenRoutes() {}

  public static void mount(Api api, TokenService tokens, TokenVerifier verifier, Cursors cursors) {
    api.route(POST, "/auth/tokens", Permission.TOKENS_WRITE, "token.create", null, (ctx, caller) ->
        tokens.create(caller, Api.request(ctx), parseCreate(JsonBodies.required(ctx), tokens.maxLifetime())).map(issued -> {
          ctx.response().putHeader("Location", api.location("/auth/tokens/" + issued.record().id()));
          Responses.json(ctx, 201, created(issued));
          return null;
        }));

    api.route(GET, "/auth/tokens", Permission.TOKENS_READ, "token.list", null, Query.paged("include_revoked"), (ctx, caller) -> {
      Page page = Pages.from(ctx, cursors, "tokens");
      boolean includeRevoked = Params.flag(ctx, "include_revoked");
      return tokens.list(caller, includeRevoked, page).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });

    api.route(GET, "/auth/tokens/{id}", Permission.TOKENS_READ, "token.read", "token", (ctx, caller) ->
        tokens.get(caller, tokenId(ctx)).map(t -> {
          Responses.ok(ctx, t.toJson(tokens.lastUse(t)));
          return null;
        }));

    api.route(DELETE, "/auth/tokens/{id}", Permission.TOKENS_WRITE, "token.revoke", "token", (ctx, caller) ->
        tokens.revoke(caller, Api.request(ctx), tokenId(ctx)).map(v -> {
          Responses.noContent(ctx);
          return null;
        }));

    api.route(POST, "/auth/tokens/{id}/rotate", Permission.TOKENS_WRITE, "token.rotate", "token", (ctx, caller) -> {
      String id = tokenId(ctx);
      return tokens.rotate(caller, Api.request(ctx), id, parseRotate(JsonBodies.required(ctx), tokens.maxLifetime())).map(r -> {
        ctx.response().putHeader("Location", api.location("/auth/tokens/" + r.issued().record().id()));
        Responses.json(ctx, 201, created(r.issued()).put("old", new JsonObject()
            .put("id", r.old().id()).put("expires", Times.format(r.old().effectiveExpiry()))));
        return null;
      });
    });

    // whoami describes a token: the panel's people read their own session instead (GET /session)
    if (!api.forMachines()) return;
    // Scripts call whoami often (health checks of their own credentials): the answer depends only on
    // the token and its effective expiry, so it is encoded once per token and expiry.
    Cache<String, Buffer> whoami = Caffeine.newBuilder().maximumSize(10_000).expireAfterWrite(Duration.ofMinutes(1))
        .executor(Runnable::run).build();
    api.anyCaller(GET, "/auth/whoami", "token.whoami", (ctx, caller) -> {
      long expires = verifier.effectiveExpiry(caller);
      Buffer body = whoami.get(caller.credential() + "@" + expires, k -> new JsonObject()
          .put("token_id", caller.credential())
          .put("name", caller.name())
          .put("scope", new JsonObject().put("team", caller.team()).put("surface", caller.grants().name())
              .put("environment", caller.environment()))
          .put("permissions", new JsonArray(caller.permissionNames()))
          .put("expires", Times.format(Instant.ofEpochMilli(expires)))
          .put("node_id", caller.nodeId())
          .toBuffer());
      ctx.response().putHeader("Content-Type", "application/json").end(body);
      return Future.succeededFuture();
    });
  }

  static TokenService.CreateRequest parseCreate(JsonObject body, Duration maxLifetime) {
    Fields f = new Fields();
    String name = f.label(body, "name", "name", 64);
    Scope scope = null;
    JsonObject s = f.object(body, "scope", "scope");
    if (s != null) {
      String team = f.slugOrStar(s, "team", "scope.team");
      String env = f.slugOrStar(s, "environment", "scope.environment");
      String surfaceName = f.string(s, "surface", "scope.surface");
      Surface surface = surfaceName == null ? null : Surface.parse(surfaceName);
      if (surfaceName != null && surface == null) {
        f.error("scope.surface", "must be one of " + Arrays.stream(Surface.values()).map(x -> x.wire).collect(Collectors.joining(", ")));
      }
      if (team != null && env != null && surface != null) scope = new Scope(team, env, surface);
    }
    Instant expires = expiry(f, body, "expires", maxLifetime);
    f.check();
    return new TokenService.CreateRequest(name, scope, expires);
  }

  static TokenService.RotateRequest parseRotate(JsonObject body, Duration maxLifetime) {
    Fields f = new Fields();
    Instant expires = expiry(f, body, "expires", maxLifetime);
    Duration retire = TokenService.MAX_RETIRE;
    String raw = f.optionalString(body, "retire_old_in", "retire_old_in");
    if (raw != null) {
      try {
        retire = Durations.parse(raw);
        if (retire.compareTo(TokenService.MAX_RETIRE) > 0) {
          f.error("retire_old_in", "must be at most 24h (the old token is retired the same day)");
        }
      } catch (IllegalArgumentException e) {
        f.error("retire_old_in", "must be a duration such as 30m or 2h");
      }
    }
    f.check();
    return new TokenService.RotateRequest(expires, retire);
  }

  private static Instant expiry(Fields f, JsonObject body, String key, Duration maxLifetime) {
    Instant expires = f.timestamp(body, key, key);
    if (expires == null) return null;
    // a JWT's exp is whole seconds: judged as issued, so "in the future" means a token that works
    expires = expires.truncatedTo(ChronoUnit.SECONDS);
    String problem = TokenService.expiryProblem(expires, maxLifetime);
    if (problem != null) {
      f.error(key, problem);
      return null;
    }
    return expires;
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
