package io.meshplane.panel;

import static io.vertx.core.http.HttpMethod.GET;
import static io.vertx.core.http.HttpMethod.PATCH;
import static io.vertx.core.http.HttpMethod.POST;

import io.meshplane.access.Boundary;
import io.meshplane.access.Permission;
import io.meshplane.access.Role;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.http.Query;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.http.JsonBodies;
import io.meshplane.http.Pages;
import io.meshplane.http.Responses;
import io.vertx.core.json.JsonObject;
import java.util.Locale;
import java.util.regex.Pattern;

/** {@code /users} (API.md §17): the panel's people, for admins ({@code users:manage}). Parsing here, rules in {@link UserService}. */
final class UserRoutes {
  static final int MAX_USERNAME = 64;
  static final int MIN_PASSWORD = 12;
  static final int MAX_PASSWORD = 256;
  /** Lower-case letters, digits and {@code . _ @ -}, starting with a letter or digit (an e-mail address fits). */
  static final Pattern USERNAME = Pattern.compile("^[a-z0-9][a-z0-9._@-]{0,63}$");

  private UserRoutes() {}

  static void mount(Api api, UserService users, Cursors cursors) {
    api.route(GET, "/users", Permission.USERS_MANAGE, "user.list", null, Query.paged(), (ctx, caller) ->
        users.list(caller, Pages.from(ctx, cursors, "users")).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(GET, "/users/{id}", Permission.USERS_MANAGE, "user.read", "user", (ctx, caller) ->
        users.get(caller, userId(ctx.pathParam("id"))).map(body -> {
          Responses.ok(ctx, body);
          return null;
        }));
    api.route(POST, "/users", Permission.USERS_MANAGE, "user.create", null, (ctx, caller) ->
        users.create(caller, Api.request(ctx), parseCreate(JsonBodies.required(ctx))).map(body -> {
          ctx.response().putHeader("Location", api.location("/users/" + body.getString("id")));
          Responses.json(ctx, 201, body);
          return null;
        }));
    api.route(PATCH, "/users/{id}", Permission.USERS_MANAGE, "user.update", "user", (ctx, caller) -> {
      String id = userId(ctx.pathParam("id"));
      return users.update(caller, Api.request(ctx), id, parsePatch(JsonBodies.required(ctx))).map(body -> {
        Responses.ok(ctx, body);
        return null;
      });
    });
  }

  static UserService.CreateRequest parseCreate(JsonObject body) {
    Fields f = new Fields();
    String username = username(f, f.string(body, "username", "username"));
    String password = password(f, f.string(body, "password", "password"));
    Role role = role(f, f.string(body, "role", "role"));
    String team = f.slugOrStar(body, "team", "team");
    String environment = f.slugOrStar(body, "environment", "environment");
    f.check();
    return new UserService.CreateRequest(username, password, role, new Boundary(team, environment));
  }

  static UserService.Patch parsePatch(JsonObject body) {
    Fields f = new Fields();
    Role role = body.getValue("role") == null ? null : role(f, f.string(body, "role", "role"));
    Boolean disabled = null;
    Object d = body.getValue("disabled");
    if (d != null) {
      if (d instanceof Boolean b) disabled = b;
      else f.error("disabled", "must be true or false");
    }
    String password = body.getValue("password") == null ? null : password(f, f.string(body, "password", "password"));
    if (f.ok() && role == null && disabled == null && password == null) f.error("(body)", "give at least one of role, disabled, password");
    f.check();
    return new UserService.Patch(role, disabled, password);
  }

  /**
   * The stored form of a username: ASCII letters lower-cased, or null when no user can have it. Only
   * ASCII is folded (a Kelvin sign must not become a {@code k}).
   */
  static String canonical(String raw) {
    for (int i = 0; i < raw.length(); i++) {
      if (raw.charAt(i) > 0x7e) return null;
    }
    String u = raw.toLowerCase(Locale.ROOT);
    return USERNAME.matcher(u).matches() ? u : null;
  }

  /** Usernames are compared and stored lower-case. */
  static String username(Fields f, String raw) {
    if (raw == null) return null;
    String u = canonical(raw);
    if (u == null) {
      f.error("username", "must be 1-" + MAX_USERNAME + " of a-z, 0-9, '.', '_', '@', '-', starting with a letter or digit");
      return null;
    }
    return u;
  }

  static String password(Fields f, String raw) {
    if (raw == null) return null;
    int n = raw.codePointCount(0, raw.length());
    if (n < MIN_PASSWORD || n > MAX_PASSWORD) {
      f.error("password", "must be " + MIN_PASSWORD + "-" + MAX_PASSWORD + " characters");
      return null;
    }
    if (raw.codePoints().anyMatch(Character::isISOControl)) {
      f.error("password", "must not contain control characters");
      return null;
    }
    return raw;
  }

  static Role role(Fields f, String raw) {
    if (raw == null) return null;
    Role r = Role.parse(raw);
    if (r == null) f.error("role", "must be admin, operator or viewer");
    return r;
  }

  private static String userId(String id) {
    if (!Ids.looksLike("usr", id)) throw Refusal.notFound("no user " + id);
    return id;
  }
}
