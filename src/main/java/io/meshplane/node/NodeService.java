package io.meshplane.node;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.auth.Denylist;
import io.meshplane.auth.Principal;
import io.meshplane.auth.Scope;
import io.meshplane.auth.Surface;
import io.meshplane.auth.TokenIssuer;
import io.meshplane.auth.TokenRecord;
import io.meshplane.auth.TokenRepository;
import io.meshplane.heartbeat.LiveNode;
import io.meshplane.heartbeat.LiveState;
import io.meshplane.heartbeat.Staleness;
import io.meshplane.common.Refusal;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.http.Page;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enrollment, inventory and deprovisioning (SPEC §4). Records live in PostgreSQL; reads overlay the
 * live fields (heartbeat, status, endpoints, reported relay and routes, telemetry) from the cluster map,
 * so a heartbeat accepted by any replica shows at once on every replica.
 */
public final class NodeService {
  private static final Pattern NAME_PREFIX = Pattern.compile("^[a-z0-9-]{1,63}$");
  private static final Set<String> STATUSES = Set.of("pending", "online", "stale");

  private static final Logger LOG = LoggerFactory.getLogger(NodeService.class);
  /** Nodes whose unreadable telemetry was logged in the last hour (one line per node, not per read). */
  private final Cache<String, Boolean> unreadableLogged =
      Caffeine.newBuilder().maximumSize(10_000).expireAfterWrite(Duration.ofHours(1)).build();
  private final Pool pool;
  private final NodeRepository nodes;
  private final TokenRepository tokenRepository;
  private final TokenIssuer issuer;
  private final Denylist denylist;
  private final AuditLog audit;
  private final LiveState live;
  private final Staleness staleness;
  private final Duration credentialLifetime;
  private final String poolBase;
  private final long poolSize;

  public NodeService(Pool pool, NodeRepository nodes, TokenRepository tokenRepository, TokenIssuer issuer, Denylist denylist,
      AuditLog audit, LiveState live, Staleness staleness, Duration credentialLifetime, String addressPool) {
    this.pool = pool;
    this.nodes = nodes;
    this.tokenRepository = tokenRepository;
    this.issuer = issuer;
    this.denylist = denylist;
    this.audit = audit;
    this.live = live;
    this.staleness = staleness;
    this.credentialLifetime = credentialLifetime;
    int slash = addressPool.indexOf('/');
    this.poolBase = addressPool.substring(0, slash);
    this.poolSize = 1L << (32 - Integer.parseInt(addressPool.substring(slash + 1)));
  }

  public Future<JsonObject> enroll(RoutingContext ctx, Principal caller, JsonObject body) {
    Fields f = new Fields();
    String name = f.string(body, "name", "name");
    if (name != null && !NodeFormats.name(name)) f.error("name", "must be a DNS label: a-z, 0-9 and '-', at most 63");
    String key = f.string(body, "public_key", "public_key");
    if (key != null && !NodeFormats.publicKey(key)) f.error("public_key", "must be the base64 of 32 bytes");
    String[] tags = tags(f, body);
    String team = boundary(f, body, "team", caller.scope().team());
    String env = boundary(f, body, "environment", caller.scope().environment());
    f.check();
    if (!caller.scope().covers(team, env)) {
      Refusal denied = Refusal.forbidden("cannot enroll a node outside your team and environment");
      return audit.denied(AuditLog.event(ctx, caller, "node.enroll", "node", null, AuditEvent.DENIED,
          caller.scope().team(), caller.scope().environment())).compose(v -> Future.failedFuture(denied));
    }
    String id = Ids.next("nd");
    Instant now = Times.now();
    return pool.withTransaction(tx -> nodes.insert(tx, id, name, team, env, key, tags, poolBase, poolSize, now)
        .compose(address -> {
          if (address == null) return Future.failedFuture(Refusal.conflict("the address pool is used up"));
          return issuer.issue(tx, "agent:" + name, new Scope(team, env, Surface.AGENT), id, now.plus(credentialLifetime), caller.tokenId())
              .compose(credential -> audit.record(tx, AuditLog.event(ctx, caller, "node.enroll", "node", id, AuditEvent.SUCCESS, team, env))
                  .map(v -> {
                    NodeRecord r = new NodeRecord(id, name, team, env, address, key, tags, "", new String[0], new String[0],
                        new String[0], "", "{}", null, now, now);
                    return new JsonObject()
                        .put("node", toJson(r, null, System.currentTimeMillis()))
                        .put("credential", new JsonObject().put("token", credential.jwt())
                            .put("expires", Times.format(credential.record().expiresAt())));
                  }));
        }))
        .recover(t -> t instanceof NodeRepository.DuplicateName
            ? Future.failedFuture(Refusal.conflict("a node named " + name + " already exists in " + team + "/" + env))
            : Future.failedFuture(t));
  }

  private static String[] tags(Fields f, JsonObject body) {
    Object v = body.getValue("tags");
    if (v == null) return new String[0];
    if (!(v instanceof JsonArray a) || a.size() > 32) {
      f.error("tags", "must be an array of at most 32 tags");
      return new String[0];
    }
    Set<String> out = new LinkedHashSet<>();
    for (int i = 0; i < a.size(); i++) {
      Object t = a.getValue(i);
      if (!(t instanceof String s) || !NodeFormats.tag(s)) {
        f.error("tags[" + i + "]", "must be tag:<slug>");
        return new String[0];
      }
      out.add(s);
    }
    return out.toArray(new String[0]);
  }

  /** Team or environment of a new node: the request's, or the token's own when that is a single value. */
  private static String boundary(Fields f, JsonObject body, String key, String callers) {
    String v = f.optionalString(body, key, key);
    if (v == null) {
      if (Scope.ALL.equals(callers)) f.error(key, "is required when your token covers every " + key);
      return callers;
    }
    if (!Fields.isSlug(v)) f.error(key, "must be lower-case letters, digits and '-'");
    return v;
  }

  public Future<JsonObject> get(Principal caller, String id) {
    return nodes.find(pool, caller.scope().team(), caller.scope().environment(), id).compose(r -> {
      if (r == null) return Future.failedFuture(Refusal.notFound("no node " + id));
      return live.get(id).map(l -> toJson(r, l, System.currentTimeMillis()));
    });
  }

  public Future<JsonObject> list(RoutingContext ctx, Principal caller, Page page) {
    Fields f = new Fields();
    String status = ctx.request().getParam("status");
    if (status != null && !STATUSES.contains(status)) f.error("status", "must be pending, online or stale");
    String tag = ctx.request().getParam("tag");
    if (tag != null && !NodeFormats.tag(tag)) f.error("tag", "must be tag:<slug>");
    String prefix = ctx.request().getParam("name_prefix");
    if (prefix != null && !NAME_PREFIX.matcher(prefix).matches()) f.error("name_prefix", "must be 1-63 of a-z, 0-9, '-'");
    f.check();
    long now = System.currentTimeMillis();
    return nodes.list(caller.scope().team(), caller.scope().environment(), status, Instant.ofEpochMilli(staleness.cutoff(now)), tag,
            prefix, page)
        .compose(rows -> {
          Set<String> ids = new LinkedHashSet<>();
          for (NodeRecord r : rows) ids.add(r.id());
          return live.getAll(ids).map(liveById -> page.respond(rows, r -> toJson(r, liveById.get(r.id()), now), r -> List.of(r.id())));
        });
  }

  public Future<Void> delete(RoutingContext ctx, Principal caller, String id) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> nodes.find(tx, caller.scope().team(), caller.scope().environment(), id).compose(r -> {
      if (r == null) return Future.failedFuture(Refusal.notFound("no node " + id));
      return nodes.delete(tx, id)
          .compose(v -> tokenRepository.revokeForNode(tx, id, now))
          .compose(revoked -> audit.record(tx, AuditLog.event(ctx, caller, "node.delete", "node", id, AuditEvent.SUCCESS,
              r.team(), r.environment())).map(revoked));
    })).compose(revoked -> {
      List<Future<Void>> denials = new ArrayList<>();
      for (TokenRecord t : revoked) denials.add(denylist.deny(t.id(), new Denylist.Entry(true, now.toEpochMilli()), t.expiresAt()));
      return Future.all(denials).compose(v -> live.remove(id));
    });
  }

  /**
   * The node's telemetry as an object; {@code {}} when what is stored cannot be read within the
   * telemetry bounds (a record from before they existed), logged once per node and hour, so one
   * record never takes a list of nodes down.
   */
  private JsonObject telemetry(String id, String text) {
    JsonObject t = Telemetry.read(text);
    if (t != null) return t;
    if (unreadableLogged.asMap().putIfAbsent(id, Boolean.TRUE) == null) {
      LOG.warn("[node: {}] stored telemetry cannot be read within the telemetry bounds; shown as an empty object until the next heartbeat", id);
    }
    return new JsonObject();
  }

  /** The node record of SPEC §4: every field present, arrays never null, live fields from the cluster map. */
  public JsonObject toJson(NodeRecord r, LiveNode l, long now) {
    Long heartbeat = l != null ? Long.valueOf(l.heartbeatAt()) : r.heartbeatAt() == null ? null : r.heartbeatAt().toEpochMilli();
    String[] endpoints = l != null ? l.endpoints() : r.endpoints();
    String[] prefixes = l != null ? l.routes() : r.routes();
    String reportedRelay = l != null ? l.relay() : r.reportedRelay();
    String telemetry = l != null ? l.telemetry() : r.telemetry();
    JsonArray routes = new JsonArray();
    for (String p : prefixes) routes.add(p + " via " + r.name());
    String relayStatus = r.relay().isEmpty() ? "unknown" : r.relay().equals(reportedRelay) ? "connected" : "moving";
    return new JsonObject()
        .put("id", r.id())
        .put("name", r.name())
        .put("team", r.team())
        .put("environment", r.environment())
        .put("address", r.address() + "/32")
        .put("public_key", r.publicKey())
        .put("endpoints", new JsonArray(List.of(endpoints)))
        .put("tags", new JsonArray(List.of(r.tags())))
        .put("routes", routes)
        .put("relay", r.relay())
        .put("relay_status", relayStatus)
        .put("services", new JsonArray(List.of(r.services())))
        .put("ingress", new JsonArray())
        .put("heartbeat", heartbeat == null ? null : Times.format(Instant.ofEpochMilli(heartbeat)))
        .put("status", staleness.status(heartbeat, now))
        .put("acl_matches", new JsonArray())
        .put("telemetry", telemetry(r.id(), telemetry))
        .put("created_at", Times.format(r.createdAt()))
        .put("updated_at", Times.format(r.updatedAt()));
  }
}
