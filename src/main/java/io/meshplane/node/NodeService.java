package io.meshplane.node;

import io.meshplane.changes.ChangeLog;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.changes.ChangeLog;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.auth.AgentCredentials;
import io.meshplane.common.Ids;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enrollment, inventory and deprovisioning (API.md §8). Records live in PostgreSQL; reads overlay the
 * live fields (heartbeat, status, endpoints, reported relay and routes, telemetry) that the heartbeat
 * feature keeps ({@link LiveNodes}), so a heartbeat accepted by any replica shows at once on every
 * replica. Takes validated values and the {@link Caller}, not HTTP. Enrollment, re-tag and deletion
 * are appended to the change log in their transaction and announced after the commit.
 */
public final class NodeService implements NodeActions {
  private static final Logger LOG = LoggerFactory.getLogger(NodeService.class);

  /** A validated enrollment: {@code boundary} is where the node will live (never {@code *}); {@code region} null = any relay. */
  public record EnrollRequest(String name, String publicKey, String[] tags, Boundary boundary, String region) {}

  private final Pool pool;
  private final NodeRepository nodes;
  private final AgentCredentials credentials;
  private final AuditLog audit;
  private final LiveNodes live;
  private final ChangeLog.Feed changes;
  private final NodePolicy policy;
  private final NodeCertificates certificates;
  private final NodePki pki;
  private volatile NodeIngress ingress = NodeIngress.NONE;
  private final Relays relays;
  private final String poolBase;
  private final long poolSize;
  /** Nodes whose unreadable telemetry was logged in the last hour (one line per node, not per read). */
  private final Cache<String, Boolean> unreadableLogged =
      Caffeine.newBuilder().maximumSize(10_000).expireAfterWrite(Duration.ofHours(1)).build();

  /** @param addressPool {@code nodes.address_pool}, an IPv4 CIDR (validated by the configuration) */
  private final RelayLoad relayLoad;
  private final NodeInventory inventory;

  /**
   * @param pki MeshCA's side: its automatic revocations (a deletion revokes the node's certificates in its transaction, {@link
   *     NodePki#certificates}) and {@code pki_sync}
   */
  public NodeService(Pool pool, NodeRepository nodes, AgentCredentials credentials, AuditLog audit, LiveNodes live, ChangeLog.Feed changes,
      NodePolicy policy, NodePki pki, Relays relays, String addressPool) {
    this.policy = policy;
    this.pki = pki;
    this.certificates = pki.certificates();
    this.relays = relays;
    this.relayLoad = new RelayLoad(pool);
    this.pool = pool;
    this.nodes = nodes;
    this.credentials = credentials;
    this.audit = audit;
    this.live = live;
    this.changes = changes;
    this.inventory = new NodeInventory(nodes, live, policy, this);
    int slash = addressPool.indexOf('/');
    this.poolBase = addressPool.substring(0, slash);
    this.poolSize = 1L << (32 - Integer.parseInt(addressPool.substring(slash + 1)));
  }

  /** The ingress routes feature's door ({@code ingress_sync}); wired once, before the replica serves. */
  public void ingress(NodeIngress door) {
    this.ingress = door;
  }

  public Future<JsonObject> enroll(Caller caller, RequestInfo request, EnrollRequest req) {
    String team = req.boundary().team();
    String env = req.boundary().environment();
    if (!caller.boundary().covers(team, env)) {
      return audit.refuse(caller, request, "node.enroll", "node", null,
          Refusal.forbidden("cannot enroll a node outside your team and environment"), false);
    }
    if (req.region() != null && !relays.hasRegion(req.region())) {
      return Future.failedFuture(Refusal.invalid("region", "no relay is configured in region " + req.region()));
    }
    String id = Ids.next("nd");
    Instant now = Times.now();
    return relayLoad.pick(relays.names(req.region())).compose(relay -> pool.withTransaction(tx ->
        nodes.insert(tx, id, req.name(), team, env, req.publicKey(), req.tags(), relay, poolBase, poolSize, now)
        .compose(address -> {
          if (address == null) return Future.failedFuture(Refusal.conflict("the address pool is used up"));
          // the change-log entry last: its clock lock is held only from here to the commit
          return credentials.issue(tx, id, req.name(), req.boundary(), caller.id())
              .compose(credential -> audit.success(tx, caller, request, "node.enroll", Target.of("node", id, req.name()), team, env)
                  .compose(v -> ChangeLog.append(tx, "enroll",
                      NodeFacts.enrolled(id, team, env, req.name(), address, req.publicKey(), req.tags(), relay)))
                  .map(seq -> new Object[] {new NodeRecord(id, req.name(), team, env, address, req.publicKey(), req.tags(), relay,
                      new String[0], new JsonArray(), new String[0], new String[0], "", "{}", null, now, now, NodeRecord.Acknowledged.NONE),
                      credential, seq}));
        })))
        .recover(t -> t instanceof Refusal r && NodeKeys.CODE.equals(r.code())
            // a key that is another node's identity: on the record, like every refusal of who a caller may be
            ? audit.refuse(caller, request, "node.enroll", "node", null, r, false) : Future.failedFuture(t))
        .compose(done -> {
          changes.announce();
          // read-your-writes: this replica's model holds the node (its acl_matches, its peers) before the answer
          return changes.applied((Long) done[2]).map(v -> {
            NodeRecord r = (NodeRecord) done[0];
            AgentCredentials.Credential credential = (AgentCredentials.Credential) done[1];
            return new JsonObject()
                .put("node", toJson(r, null, System.currentTimeMillis()))
                .put("credential", new JsonObject().put("token", credential.jwt()).put("expires", Times.format(credential.expires())));
          });
        });
  }

  /**
   * Re-tag (API.md §8): the node's tags become {@code tags}. Tags drive the policy, so the change goes into
   * the change log with the update, and every replica recomputes the peers, rules and acl_matches of
   * the nodes it affects (and of no other).
   */
  @Override
  public Future<JsonObject> retag(Caller caller, RequestInfo request, String id, String[] tags) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> nodes.find(tx, caller.boundary(), id).compose(r -> {
      if (r == null) return Future.failedFuture(Refusal.notFound("no node " + id));
      return nodes.retag(tx, id, tags, now).compose(updated -> {
        if (!updated) return Future.failedFuture(Refusal.notFound("no node " + id));
        return audit.success(tx, caller, request, "node.retag", Target.of("node", id, r.name()), r.team(), r.environment())
            .compose(v -> ChangeLog.append(tx, "retag", new JsonObject().put("id", id).put("tags", new JsonArray(List.of(tags)))));
      });
    })).compose(seq -> {
      changes.announce();
      return changes.applied(seq).compose(v -> get(caller, id));
    });
  }

  /** The configured relays with the number of nodes assigned to each inside the caller's boundary. */
  public Future<JsonObject> relays(Caller caller) {
    return nodes.relayCounts(caller.boundary()).map(counts -> {
      JsonArray items = new JsonArray();
      for (Relays.Relay r : relays.all()) {
        items.add(new JsonObject().put("name", r.name()).put("region", r.region()).put("url", r.url())
            .put("nodes", counts.getOrDefault(r.name(), 0L)));
      }
      return new JsonObject().put("items", items).put("next_cursor", null);
    });
  }

  @Override
  public Future<JsonObject> get(Caller caller, String id) {
    return nodes.find(pool, caller.boundary(), id).compose(r -> {
      if (r == null) return Future.failedFuture(Refusal.notFound("no node " + id));
      return live.get(id).map(l -> toJson(r, l, System.currentTimeMillis()));
    });
  }

  /** A page of the inventory (API.md §8): filters, order, keyset page and total ({@link NodeInventory}). */
  public Future<io.vertx.core.buffer.Buffer> list(Caller caller, NodeFilter filter, NodeSort sort, Page page) {
    return inventory.list(caller.boundary(), filter, sort, page);
  }

  @Override
  public Future<List<JsonObject>> matching(Caller caller, NodeFilter filter, int max, Page.Offload offload) {
    return inventory.matching(caller.boundary(), filter, max, offload).compose(rows -> offload.run(() -> {
      List<JsonObject> out = new java.util.ArrayList<>(rows.size());
      for (NodeRecord r : rows) out.add(new JsonObject().put("id", r.id()).put("name", r.name()));
      return out;
    }));
  }

  /** {@code {total, online, stale, pending}} of the caller's boundary, on the flushed heartbeat times (as the list's filter). */
  public Future<JsonObject> counts(Caller caller) {
    return counts(caller.boundary());
  }

  /** The same counts of a boundary ({@link Boundary#EVERYTHING}: the mesh's, for the overview's series sampler). */
  public Future<JsonObject> counts(Boundary boundary) {
    long now = System.currentTimeMillis();
    return nodes.counts(boundary, Instant.ofEpochMilli(live.staleCutoff(now))).map(c -> new JsonObject()
        .put("total", c[0]).put("online", c[0] - c[1] - c[2]).put("stale", c[2]).put("pending", c[1]));
  }

  /** The caller's {@code limit} nodes that went stale last (latest flushed heartbeat first): the panel's overview. */
  public Future<JsonArray> staleFirst(Caller caller, int limit) {
    return nodes.staleFirst(caller.boundary(), Instant.ofEpochMilli(live.staleCutoff(System.currentTimeMillis())), Math.max(0, Math.min(limit, 100)));
  }

  /** {@code {id, name, team, environment, heartbeat}} of these nodes in the caller's boundary, in id order (at most 100 ids). */
  public Future<JsonArray> briefs(Caller caller, List<String> ids) {
    if (ids.size() > 100) return Future.failedFuture(new IllegalArgumentException("at most 100 ids"));
    return nodes.briefs(caller.boundary(), ids);
  }

  @Override
  public Future<Void> delete(Caller caller, RequestInfo request, String id) {
    Instant now = Times.now();
    return pool.withTransaction(tx -> nodes.find(tx, caller.boundary(), id).compose(r -> {
      if (r == null) return Future.failedFuture(Refusal.notFound("no node " + id));
      // two deletions of one node at once: both found it, the second deletes nothing once the first
      // commits, and is rolled back as a 404 (one audit event, one DELETED)
      // the node's certificates are locked before its row (every writer locks certificates, then nodes, then the clock)
      // and revoked at the end, with their pki entries, in this transaction: a deleted node holds no valid certificate
      return certificates.deleting(tx, caller, request, id).compose(pending -> nodes.delete(tx, id)
          .compose(deleted -> deleted ? credentials.revokeAll(tx, id, now) : Future.failedFuture(Refusal.notFound("no node " + id)))
          .compose(denyAfterCommit -> audit.success(tx, caller, request, "node.delete", Target.of("node", id, r.name()), r.team(), r.environment())
              .compose(v -> pending.revoke(tx, null))
              .compose(v -> ChangeLog.append(tx, "delete", new JsonObject().put("id", id)))
              .map(seq -> new Object[] {denyAfterCommit, seq})));
    })).compose(done -> {
      @SuppressWarnings("unchecked")
      java.util.function.Supplier<Future<Void>> denyAfterCommit = (java.util.function.Supplier<Future<Void>>) done[0];
      // committed: the deletion is a fact whatever happens next, so every replica hears of it now, and
      // what follows is tidying that is also done elsewhere: a failure is logged, not answered (the
      // denylist reconciliation puts the revocations there within 30 s; a live entry left behind is
      // dropped by the write-behind if a heartbeat writes it again, and otherwise costs memory only: its
      // row is gone, so it is in no list and no stored event)
      changes.announce();
      return denyAfterCommit.get()
          .compose(v -> live.forget(id))
          .recover(e -> {
            LOG.warn("[request: {}] [node: {}] deleted, but its credentials or live state are not cleared yet ({}); retried in the background",
                request.requestId(), id, e.getMessage());
            return Future.succeededFuture();
          })
          .compose(v -> changes.applied((Long) done[1]));
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

  /**
   * {@code policy_sync}: the versions the node acknowledged against the current ones (the policy
   * feature's), and whether its last heartbeat reported exactly the services bound to it ({@code services}:
   * current or behind); {@code state} is current only when both are. {@code acknowledged_at}: when the
   * node's heartbeat first acknowledged the versions it acknowledges now, as the write-behind stamped
   * it in PostgreSQL; if the heartbeat that changed them is not flushed yet, that heartbeat's time (the
   * live entry is ahead of the row by at most a flush interval). Without a live entry, the row's.
   */
  private JsonObject sync(NodeRecord r, LiveNodes.Live l) {
    NodeRecord.Acknowledged stored = r.acknowledged();
    long peers = l == null ? stored.peers() : l.knownPeers();
    long acl = l == null ? stored.acl() : l.knownAcl();
    JsonObject sync = policy.sync(r.id(), peers, acl);
    Instant at = l == null || l.knownPeers() == stored.peers() && l.knownAcl() == stored.acl() ? stored.at()
        : Instant.ofEpochMilli(l.heartbeatAt());
    sync.put("acknowledged_at", peers < 0 && acl < 0 || at == null ? null : Times.format(at));
    Set<String> reported = l == null ? Set.of() : new java.util.HashSet<>(List.of(l.services()));
    boolean servicesCurrent = reported.equals(new java.util.HashSet<>(List.of(r.services())));
    sync.put("services", servicesCurrent ? "current" : "behind");
    if (!servicesCurrent) sync.put("state", "behind");
    return sync;
  }

  /** The node record of API.md §8: every field present, arrays never null, live fields from the cluster map. */
  public JsonObject toJson(NodeRecord r, LiveNodes.Live l, long now) {
    Long heartbeat = l != null ? Long.valueOf(l.heartbeatAt()) : r.heartbeatAt() == null ? null : r.heartbeatAt().toEpochMilli();
    String[] endpoints = l != null ? l.endpoints() : r.endpoints();
    String[] prefixes = l != null ? l.routes() : r.routes();
    String reportedRelay = l != null ? l.reportedRelay() : r.reportedRelay();
    // the node's current key: the last one it reported (the live entry is ahead of the last flush), else the enrolled one
    String key = l != null && !l.reportedKey().isEmpty() ? l.reportedKey() : r.publicKey();
    String telemetry = l != null ? l.telemetry() : r.telemetry();
    JsonArray routes = new JsonArray();
    for (String p : prefixes) routes.add(p + " via " + r.name());
    // unknown until the node has reported a relay at all (a node just enrolled is not "moving")
    String relayStatus = r.relay().isEmpty() || reportedRelay.isEmpty() ? "unknown" : r.relay().equals(reportedRelay) ? "connected" : "moving";
    return new JsonObject()
        .put("id", r.id())
        .put("name", r.name())
        .put("team", r.team())
        .put("environment", r.environment())
        .put("address", r.address() + "/32")
        .put("public_key", key)
        .put("endpoints", new JsonArray(List.of(endpoints)))
        .put("tags", new JsonArray(List.of(r.tags())))
        .put("routes", routes)
        .put("relay", r.relay())
        .put("relay_status", relayStatus)
        .put("services", new JsonArray(List.of(r.services())))
        .put("ingress", r.ingress().copy())
        .put("heartbeat", heartbeat == null ? null : Times.format(Instant.ofEpochMilli(heartbeat)))
        .put("status", live.status(heartbeat, now))
        .put("acl_matches", new JsonArray(policy.aclMatches(r.id())))
        .put("policy_sync", sync(r, l))
        .put("pki_sync", pki.sync(l == null ? "" : l.pkiBundle(), l == null ? "" : l.pkiIssuer(), l == null ? "" : l.pkiSerial()))
        .put("ingress_sync", ingress.sync(r.id(), l == null ? "" : l.ingressVersion()))
        .put("ingress_stats", l == null || l.ingressStats().isEmpty() ? null : new JsonObject(l.ingressStats()))
        .put("waf_sync", ingress.wafSync(r.id(), l == null ? "" : l.wafReport()))
        .put("telemetry", telemetry(r.id(), telemetry))
        .put("created_at", Times.format(r.createdAt()))
        .put("updated_at", Times.format(r.updatedAt()));
  }
}
