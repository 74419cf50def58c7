package io.meshplane.panel;

import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Denials;
import io.meshplane.access.Grants;
import io.meshplane.access.Role;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Panel users (API.md §17): create, list, read, change (role, disabled, password), and the login's
 * check of a username and password. Every change is audited in its transaction; a change that alters
 * what a person may do (disabled, another role, a new password) ends that person's sessions on every
 * replica. Nobody creates or raises a user beyond themselves: the new user's boundary must lie inside
 * the caller's and its role may not grant a permission the caller lacks.
 */
public final class UserService {
  /** What {@code POST /users} asks for, validated. */
  public record CreateRequest(String username, String password, Role role, Boundary boundary) {}

  /** What {@code PATCH /users/{id}} asks to change; null = unchanged. */
  public record Patch(Role role, Boolean disabled, String password) {}

  private final Pool pool;
  private final UserRepository users;
  private final Passwords passwords;
  private final Sessions sessions;
  private final AuditLog audit;
  private final Denials denials;

  UserService(Pool pool, UserRepository users, Passwords passwords, Sessions sessions, AuditLog audit) {
    this.pool = pool;
    this.users = users;
    this.passwords = passwords;
    this.sessions = sessions;
    this.audit = audit;
    this.denials = audit;
  }

  public Future<JsonObject> create(Caller caller, RequestInfo request, CreateRequest req) {
    if (!caller.boundary().contains(req.boundary())) {
      return denials.refuse(caller, request, "user.create", null, null,
          Refusal.forbidden("a user cannot be created outside your own team and environment"), false);
    }
    if (!within(caller, req.role())) {
      return denials.refuse(caller, request, "user.create", null, null,
          Refusal.forbidden("the " + req.role().wire + " role grants more than you hold"), false);
    }
    Instant now = Times.now();
    return passwords.hash(req.password()).compose(hash -> {
      UserRecord u = new UserRecord(Ids.next("usr"), req.username(), hash, req.role(), req.boundary().team(),
          req.boundary().environment(), false, now, now, null, caller.kind().wire + ":" + caller.id());
      return pool.withTransaction(tx -> users.insert(tx, u)
          .compose(v -> audit.success(tx, caller, request, "user.create", Target.of("user", u.id(), u.username()), u.team(), u.environment()))
          .map(v -> u.toJson()));
    });
  }

  public Future<JsonObject> get(Caller caller, String id) {
    return users.find(pool, caller.boundary(), id, false).map(u -> {
      if (u == null) throw Refusal.notFound("no user " + id);
      return u.toJson();
    });
  }

  public Future<io.vertx.core.buffer.Buffer> list(Caller caller, Page page) {
    return users.list(caller.boundary(), page).compose(rows -> page.render(rows, UserRecord::toJson, u -> List.of(u.id())));
  }

  public Future<JsonObject> update(Caller caller, RequestInfo request, String id, Patch patch) {
    if (patch.role() != null && !within(caller, patch.role())) {
      return denials.refuse(caller, request, "user.update", "user", id,
          Refusal.forbidden("the " + patch.role().wire + " role grants more than you hold"), false);
    }
    if (id.equals(caller.id()) && ((patch.role() != null && !patch.role().wire.equals(caller.grants().name()))
        || Boolean.TRUE.equals(patch.disabled()))) {
      return Future.failedFuture(Refusal.conflict("you cannot disable yourself or change your own role: ask another admin"));
    }
    // the user must exist (inside the caller's boundary) before a password is hashed for it
    Future<String> hash = patch.password() == null ? Future.succeededFuture(null)
        : users.find(pool, caller.boundary(), id, false).compose(u -> u == null
            ? Future.failedFuture(Refusal.notFound("no user " + id)) : passwords.hash(patch.password()));
    return hash.compose(newHash -> pool.withTransaction(tx -> users.find(tx, caller.boundary(), id, true).compose(u -> {
      if (u == null) return Future.failedFuture(Refusal.notFound("no user " + id));
      if (newHash != null && u.oidc()) {
        return Future.failedFuture(Refusal.conflict("this user signs in through the identity provider and has no password here"));
      }
      List<String> changed = new ArrayList<>();
      Role role = u.role();
      if (patch.role() != null && patch.role() != u.role()) {
        role = patch.role();
        changed.add("role");
      }
      boolean disabled = u.disabled();
      if (patch.disabled() != null && patch.disabled() != u.disabled()) {
        disabled = patch.disabled();
        changed.add("disabled");
      }
      String passwordHash = u.passwordHash();
      if (newHash != null) {
        passwordHash = newHash;
        changed.add("password");
      }
      if (changed.isEmpty()) return Future.succeededFuture(new Object[] {u, changed});
      UserRecord next = new UserRecord(u.id(), u.username(), passwordHash, role, u.team(), u.environment(), disabled, u.createdAt(),
          Times.now(), u.lastLoginAt(), u.createdBy(), u.source(), u.oidcIssuer(), u.oidcSubject());
      return users.update(tx, next)
          .compose(v -> audit.success(tx, caller, request, "user.update", Target.of("user", u.id(), u.username()), u.team(), u.environment(),
              new JsonObject().put("changed", new JsonArray(changed)).put("role", next.role().wire).put("disabled", next.disabled())))
          .map(v -> new Object[] {next, changed});
    })).compose(result -> {
      UserRecord u = (UserRecord) result[0];
      @SuppressWarnings("unchecked")
      List<String> changed = (List<String>) result[1];
      // whatever changed (role, disabled, password) changes what the person's open sessions may do: end them
      Future<Void> ended = changed.isEmpty() ? Future.succeededFuture() : sessions.endAllOf(u.id());
      return ended.map(v -> u.toJson());
    }));
  }

  /** The user of this name when {@code password} is theirs and they are not disabled; null otherwise, in the same time. */
  Future<UserRecord> check(String username, String password) {
    // an IdP user has no password here: checked against the dummy hash, so it fails in the same time as any other
    return users.byUsername(username).compose(u -> passwords.verify(password, u == null || u.oidc() ? null : u.passwordHash())
        .map(ok -> ok && !u.disabled() && !u.oidc() ? u : null));
  }

  /** The user of this name, or null (to name a failed login's actor). */
  Future<UserRecord> byUsername(String username) {
    return users.byUsername(username);
  }

  /**
   * Records a login (and its time) in one transaction, if the user is still as {@code u} was read
   * (enabled, not changed since): false when a change committed meanwhile, and nothing is recorded.
   */
  Future<Boolean> loggedIn(UserRecord u, RequestInfo request) {
    return pool.withTransaction(tx -> users.loggedIn(tx, u.id(), u.updatedAt(), Times.now()).compose(current -> !current
        ? Future.succeededFuture(false)
        : audit.record(tx, AuditEvent.of(new Actor("user", u.id(), u.username()), request, "session.login", "user", u.id(),
            AuditEvent.SUCCESS, u.team(), u.environment()).named(u.username())).map(true)));
  }

  /**
   * Records a failed login. A known user's failure is placed in their team and environment; a name
   * that is no user's is placed under {@code *}, readable only by callers of every team.
   */
  Future<Void> loginFailed(UserRecord known, String username, RequestInfo request) {
    Actor actor = known == null ? new Actor("user", "unknown", username) : new Actor("user", known.id(), known.username());
    AuditEvent e = AuditEvent.of(actor, request, "session.login", known == null ? null : "user", known == null ? null : known.id(),
        AuditEvent.FAILED, known == null ? Boundary.ALL : known.team(), known == null ? Boundary.ALL : known.environment())
        .named(known == null ? null : known.username());
    return audit.record(pool, e);
  }

  Future<Void> loggedOut(Caller caller, RequestInfo request) {
    return audit.success(pool, caller, request, "session.logout", Target.of("user", caller.id(), caller.name()), caller.team(), caller.environment());
  }

  /**
   * {@code meshplane user create} (API.md §5): the first admin, or anyone, written straight to the
   * database, validated as {@code POST /users} and audited as the command line. Blocking: for the
   * command line's thread. A refused field throws a {@link Refusal} naming it.
   */
  public static JsonObject createFromCli(Pool pool, AuditLog audit, JsonObject body, String osUser) {
    CreateRequest req = checkNew(body);
    Instant now = Times.now();
    UserRecord u = new UserRecord(Ids.next("usr"), req.username(), Passwords.hashNow(req.password()), req.role(), req.boundary().team(),
        req.boundary().environment(), false, now, now, null, "cli:" + osUser);
    try {
      return io.meshplane.common.Blocking.await(pool.withTransaction(tx -> new UserRepository(pool).insert(tx, u)
          .compose(v -> audit.record(tx, AuditEvent.of(Actor.cli(osUser), RequestInfo.NONE, "user.create", "user", u.id(),
              AuditEvent.SUCCESS, u.team(), u.environment()).named(u.username())))
          .map(v -> u.toJson())), java.time.Duration.ofSeconds(30), "creating the user");
    } catch (IllegalStateException e) {
      // a refusal (the name is taken) is the person's mistake, not a failure of the command; whoever
      // runs it holds the database anyway, so it may say plainly what the API does not
      if (e.getCause() instanceof Refusal r) {
        throw r.kind() == Refusal.Kind.CONFLICT ? Refusal.conflict("a user named " + u.username() + " exists") : r;
      }
      throw e;
    }
  }

  /** Validates a new user as {@code POST /users} does (a {@link Refusal} naming the fields), before anything is opened. */
  public static CreateRequest checkNew(JsonObject body) {
    return UserRoutes.parseCreate(body);
  }

  /** True when every permission of {@code role} is one the caller holds: nobody hands out more than they have. */
  private static boolean within(Caller caller, Role role) {
    return caller.grants().permissions().containsAll(Grants.of(role).permissions());
  }
}
