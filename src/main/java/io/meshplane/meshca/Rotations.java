package io.meshplane.meshca;

import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Sql;
import io.meshplane.common.Times;
import io.meshplane.node.LiveNodes;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.bouncycastle.cert.X509CertificateHolder;

/**
 * CA rotation (docs/ARCHITECTURE.md, "MeshCA: rotation"): a new intermediate, or a new root with its
 * intermediate, brought in through phases without an outage.
 *
 * <ol>
 *   <li>{@code staged}: the new authorities exist (keys sealed), nodes see nothing of them.
 *   <li>{@code distributing}: a new root joins the bundle (an intermediate rotation changes no bundle);
 *       nodes receive it with their next answer.
 *   <li>{@code issuing}: the new intermediate signs, the old one no longer does; every node whose
 *       certificate comes from another authority is told to renew ({@code renew}), under the signing
 *       budget. A root rotation's chain ends with the new root cross-signed by the old one, so that a
 *       node still holding only the old root verifies the new certificates.
 *   <li>{@code retired}: the old intermediate (and root) leave; the bundle loses the old root.
 * </ol>
 *
 * A phase advances only when every online node that takes part in MeshCA (it reports a {@code pki}
 * block) holds what the next phase needs: the current bundle before {@code issuing}, a certificate from
 * the new intermediate before {@code retired}; stale nodes are counted apart and do not hold it back
 * (they get the bundle and a certificate when they return, renewing within the grace). Until
 * {@code retired} a rotation rolls back: the old intermediate signs again, the new authorities are
 * retired, nodes holding the new certificates are told to renew, and their chains still verify under
 * the old root meanwhile. Every step is one transaction under the hierarchy's advisory lock: the rows'
 * states, the rotation's phase, a {@code pki} change-log entry carrying the new hierarchy (every
 * replica switches in the log's order), and the audit event.
 */
final class Rotations {
  static final List<String> PHASES = List.of("staged", "distributing", "issuing", "retired");
  /** Holdouts a preview lists by id (the counts are whole). */
  static final int HOLDOUTS = 50;

  /** One rotation's row. */
  record Rotation(String id, String kind, String phase, String oldRoot, String oldIntermediate, String newRoot, String newIntermediate,
      boolean automatic, Instant startedAt, Instant updatedAt, Instant finishedAt) {
    boolean open() {
      return finishedAt == null;
    }

    /** The phase after this one; null when finished. */
    String next() {
      int i = PHASES.indexOf(phase);
      return i < 0 || i == PHASES.size() - 1 ? null : PHASES.get(i + 1);
    }

    JsonObject json() {
      return new JsonObject().put("id", id).put("kind", kind).put("phase", phase).put("next_phase", open() ? next() : null)
          .put("old_root", oldRoot).put("old_intermediate", oldIntermediate).put("new_root", newRoot).put("new_intermediate", newIntermediate)
          .put("automatic", automatic).put("started_at", Times.format(startedAt)).put("updated_at", Times.format(updatedAt))
          .put("finished_at", finishedAt == null ? null : Times.format(finishedAt));
    }

    static Rotation of(Row r) {
      return new Rotation(r.getString("id"), r.getString("kind"), r.getString("phase"), r.getString("old_root"), r.getString("old_intermediate"),
          r.getString("new_root"), r.getString("new_intermediate"), r.getBoolean("automatic"), r.getOffsetDateTime("started_at").toInstant(),
          r.getOffsetDateTime("updated_at").toInstant(), r.getOffsetDateTime("finished_at") == null ? null
              : r.getOffsetDateTime("finished_at").toInstant());
    }
  }

  private static final String COLUMNS = "id, kind, phase, old_root, old_intermediate, new_root, new_intermediate, automatic, started_at, "
      + "updated_at, finished_at";

  private final Vertx vertx;
  private final Pool pool;
  private final Pool reads;
  private final Authorities authorities;
  private final AuditLog audit;
  private final ChangeLog.Feed changes;
  private final Supplier<LiveNodes> live;

  Rotations(Vertx vertx, Pool pool, Pool reads, Authorities authorities, AuditLog audit, ChangeLog.Feed changes, Supplier<LiveNodes> live) {
    this.vertx = vertx;
    this.pool = pool;
    this.reads = reads;
    this.authorities = authorities;
    this.audit = audit;
    this.changes = changes;
    this.live = live;
  }

  /** The open rotation, else null. */
  Future<Rotation> open(SqlClient client) {
    return client.query("SELECT " + COLUMNS + " FROM meshca_rotations WHERE finished_at IS NULL").execute()
        .map(rows -> rows.size() == 0 ? null : Rotation.of(rows.iterator().next()));
  }

  /** {@code GET /meshca/rotation}: the open rotation (or null), its preview, and the last finished ones (of the last {@code max}). */
  Future<JsonObject> state(int max) {
    return reads.withConnection(c -> open(c).compose(open -> history(c, max).compose(history -> preview(open).map(p -> {
      JsonArray past = new JsonArray();
      for (Rotation r : history) if (!r.open()) past.add(r.json());
      return new JsonObject().put("rotation", open == null ? null : open.json()).put("preview", p).put("history", past);
    }))));
  }

  /** The last {@code max} rotations, newest first. */
  Future<List<Rotation>> history(SqlClient client, int max) {
    return client.preparedQuery("SELECT " + COLUMNS + " FROM meshca_rotations ORDER BY started_at DESC, id DESC LIMIT $1").execute(Tuple.of(max))
        .map(rows -> {
          List<Rotation> out = new java.util.ArrayList<>();
          rows.forEach(r -> out.add(Rotation.of(r)));
          return out;
        });
  }

  /**
   * What the open rotation's next phase needs and who holds it back: {@code ready}, the counts
   * ({@code online}: online nodes that report a {@code pki} block; {@code behind}; {@code stale_behind})
   * and the first {@link #HOLDOUTS} holdouts. The counting runs on the cluster map's members, off the
   * event loop.
   */
  Future<JsonObject> preview(Rotation r) {
    if (r == null || !r.open()) return Future.succeededFuture(null);
    Authorities.Hierarchy h = authorities.current();
    String next = r.next();
    if ("distributing".equals(next)) {
      return Future.succeededFuture(new JsonObject().put("next_phase", next).put("ready", true).put("needs", "nothing: the new authorities are staged"));
    }
    // before issuing: every online node holds the current bundle; before retiring: also a certificate from the new intermediate
    String issuer = "retired".equals(next) ? r.newIntermediate() : null;
    String needs = issuer == null ? "every online node holds the bundle " + h.bundleVersion()
        : "every online node holds the bundle " + h.bundleVersion() + " and a certificate from " + issuer;
    return vertx.executeBlocking(() -> live.get().pkiTally(h.bundleVersion(), issuer, HOLDOUTS), false).map(t -> new JsonObject()
        .put("next_phase", next).put("ready", t.behind() == 0).put("needs", needs).put("bundle", h.bundleVersion()).put("issuer", issuer)
        .put("online", t.online()).put("behind", t.behind()).put("stale_behind", t.staleBehind()).put("holdouts", new JsonArray(t.holdouts())));
  }

  /** Online nodes that report another bundle than the current one (bundle sync), counted on the cluster map's members. */
  Future<Long> bundleBehind() {
    Authorities.Hierarchy h = authorities.current();
    if (h == null) return Future.succeededFuture(0L);
    return vertx.executeBlocking(() -> live.get().pkiTally(h.bundleVersion(), null, 0).behind(), false);
  }

  /**
   * Starts a rotation of {@code kind} (intermediate or root): makes the new keys and certificates (off
   * the event loop), then stages them. Needs the current root's key (a root kept outside the coordinator
   * is rotated by an operator: 409).
   */
  Future<Rotation> start(Actor actor, RequestInfo request, String kind, boolean automatic) {
    Authorities.Hierarchy h = authorities.current();
    Authorities.Authority oldIntermediate = h.intermediate();
    Authorities.Authority oldRoot = h.byId(oldIntermediate.parent());
    return pool.preparedQuery("SELECT sealed_key FROM meshca_authorities WHERE id = $1").execute(Tuple.of(oldRoot.id())).compose(rows -> {
      io.vertx.core.buffer.Buffer sealed = rows.iterator().next().getBuffer("sealed_key");
      if (sealed == null) {
        return Future.failedFuture(Refusal.conflict("the root " + oldRoot.id() + " is kept outside the coordinator: rotate the intermediate "
            + "with POST /v1/meshca/intermediates/requests, meshplane ca sign and POST /v1/meshca/intermediates"));
      }
      return vertx.<Made>executeBlocking(() -> make(kind, oldRoot, sealed.getBytes()), false);
    }).compose(made -> stage(actor, request, kind, made, automatic, oldRoot.id(), oldIntermediate.id(), null));
  }

  /**
   * Stages what {@code made} holds as a new rotation of {@code kind}, in one transaction under the lock:
   * the new authorities ({@code staged}), the rotation, the hierarchy's entry and the audit event
   * ({@code meshca.rotation.start}; {@code extra} adds to its details). 409 when a rotation is open or the
   * signing intermediate changed meanwhile. {@code made.rootSealed} is null for a root kept outside.
   */
  Future<Rotation> stage(Actor actor, RequestInfo request, String kind, Made made, boolean automatic, String oldRoot, String oldIntermediate,
      java.util.function.Function<SqlClient, Future<Void>> extra) {
    return pool.withTransaction(tx -> lock(tx).compose(v -> open(tx)).compose(current -> {
      if (current != null) {
        return Future.<Done>failedFuture(Refusal.conflict("rotation " + current.id() + " (" + current.kind() + ") is at phase "
            + current.phase() + ": advance or roll it back first"));
      }
      if (!oldIntermediate.equals(authorities.current().intermediate().id())) {
        return Future.<Done>failedFuture(Refusal.conflict("the hierarchy changed while the rotation was prepared: start it again"));
      }
      Instant now = Times.now();
      Rotation r = new Rotation(Ids.next("rot"), kind, "staged", oldRoot, oldIntermediate, made.rootId(), made.intermediateId(),
          automatic, now, now, null);
      Future<Void> rows = made.root() == null ? Future.succeededFuture()
          : Authorities.insert(tx, made.rootId(), "root", null, "staged", made.root(), made.rootSealed(), made.crossSigned());
      return rows.compose(v -> Authorities.insert(tx, made.intermediateId(), "intermediate", made.root() == null ? oldRoot : made.rootId(),
              "staged", made.intermediate(), made.intermediateSealed(), null))
          .compose(v -> tx.preparedQuery("INSERT INTO meshca_rotations (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)")
              .execute(Tuple.from(new Object[] {r.id(), kind, r.phase(), r.oldRoot(), r.oldIntermediate(), r.newRoot(), r.newIntermediate(),
                  automatic, Sql.odt(now), Sql.odt(now)})))
          .compose(v -> extra == null ? Future.<Void>succeededFuture() : extra.apply(tx))
          .compose(v -> step(tx, actor, request, r, "meshca.rotation.start", null))
          .map(seq -> new Done(seq, r));
    })).compose(this::applied);
  }

  /** Advances the open rotation {@code id} from {@code phase} (what the caller saw) to the next one, when its preview is ready. */
  Future<Rotation> advance(Actor actor, RequestInfo request, String id, String phase) {
    return pool.withConnection(c -> open(c)).compose(r -> {
      checkOpen(r, id, phase);
      return preview(r).compose(p -> {
        if (!p.getBoolean("ready")) {
          return Future.failedFuture(new Refusal(Refusal.Kind.CONFLICT, "not_ready", "rotation " + id + " cannot enter " + r.next() + ": "
              + p.getLong("behind") + " online node(s) do not yet hold what it needs (" + p.getString("needs") + "); GET /v1/meshca/rotation "
              + "lists them", List.of()));
        }
        return move(actor, request, r, r.next(), "meshca.rotation.advance", p);
      });
    });
  }

  /** Rolls the open rotation {@code id} back (any phase before {@code retired}): the old intermediate signs again, the new authorities are retired. */
  Future<Rotation> rollback(Actor actor, RequestInfo request, String id, String phase) {
    return pool.withConnection(c -> open(c)).compose(r -> {
      checkOpen(r, id, phase);
      return move(actor, request, r, "rolled_back", "meshca.rotation.rollback", null);
    });
  }

  private static void checkOpen(Rotation r, String id, String phase) {
    if (r == null || !r.id().equals(id)) throw Refusal.notFound("no open rotation " + id);
    if (phase != null && !phase.equals(r.phase())) {
      throw Refusal.conflict("rotation " + id + " is at phase " + r.phase() + ", not " + phase + ": read it again");
    }
  }

  /** One step: the authorities' new states, the rotation's phase, the hierarchy's entry and the audit event, under the lock. */
  private Future<Rotation> move(Actor actor, RequestInfo request, Rotation r, String to, String action, JsonObject preview) {
    Map<String, String> states = new LinkedHashMap<>();
    boolean root = r.newRoot() != null;
    switch (to) {
      case "distributing" -> {
        if (root) states.put(r.newRoot(), "active");
      }
      case "issuing" -> {
        states.put(r.oldIntermediate(), "retiring");
        states.put(r.newIntermediate(), "active");
      }
      case "retired" -> {
        states.put(r.oldIntermediate(), "retired");
        if (root) states.put(r.oldRoot(), "retired");
      }
      default -> { // rolled_back
        states.put(r.newIntermediate(), "retired");
        if (root) states.put(r.newRoot(), "retired");
        states.put(r.oldIntermediate(), "active");
      }
    }
    Instant now = Times.now();
    boolean finished = "retired".equals(to) || "rolled_back".equals(to);
    Rotation moved = new Rotation(r.id(), r.kind(), to, r.oldRoot(), r.oldIntermediate(), r.newRoot(), r.newIntermediate(), r.automatic(),
        r.startedAt(), now, finished ? now : null);
    return pool.withTransaction(tx -> lock(tx)
        .compose(v -> tx.preparedQuery("UPDATE meshca_rotations SET phase = $2, updated_at = $3, finished_at = $4 WHERE id = $1 AND phase = $5 "
            + "AND finished_at IS NULL").execute(Tuple.of(r.id(), to, Sql.odt(now), finished ? Sql.odt(now) : null, r.phase())))
        .compose(rows -> {
          if (rows.rowCount() == 0) return Future.<Done>failedFuture(Refusal.conflict("rotation " + r.id() + " moved on meanwhile: read it again"));
          // the new signing intermediate first leaves its old state, so the one-signing index never sees two
          Map<String, String> first = new LinkedHashMap<>();
          states.forEach((k, s) -> {
            if (!"active".equals(s) || !k.equals(r.newIntermediate()) && !k.equals(r.oldIntermediate())) first.put(k, s);
          });
          Map<String, String> then = new LinkedHashMap<>(states);
          then.keySet().removeAll(first.keySet());
          return Authorities.states(tx, first).compose(v -> Authorities.states(tx, then))
              .compose(v -> step(tx, actor, request, moved, action, preview)).map(seq -> new Done(seq, moved));
        })).compose(this::applied);
  }

  /** A committed step: its change-log entry's seq and the rotation after it. */
  private record Done(long seq, Rotation rotation) {}

  /** Answers once this replica has applied the step's entry (its hierarchy is the new one). */
  private Future<Rotation> applied(Done d) {
    changes.announce();
    return changes.applied(d.seq()).map(v -> d.rotation());
  }

  private static Future<Void> lock(SqlClient tx) {
    return tx.preparedQuery("SELECT pg_advisory_xact_lock($1)").execute(Tuple.of(Authorities.CREATE_LOCK)).mapEmpty();
  }

  /** The hierarchy's change-log entry and the audit event of one step. */
  private Future<Long> step(SqlClient tx, Actor actor, RequestInfo request, Rotation r, String action, JsonObject preview) {
    return Authorities.entry(tx, r.id(), r.phase()).compose(data -> ChangeLog.append(tx, Revocations.KIND, data))
        .compose(seq -> {
          JsonObject details = new JsonObject().put("kind", r.kind()).put("phase", r.phase()).put("new_intermediate", r.newIntermediate())
              .put("new_root", r.newRoot()).put("automatic", r.automatic()).put("seq", seq);
          if (preview != null) details.put("online", preview.getLong("online")).put("stale_behind", preview.getLong("stale_behind"));
          return audit.record(tx, AuditEvent.of(actor, request, action, "rotation", r.id(), AuditEvent.SUCCESS, "*", "*").with(details))
              .map(seq);
        });
  }

  /** What a rotation stages: a new intermediate, and for a root rotation a new root and its cross-signed certificate. */
  record Made(String rootId, X509CertificateHolder root, byte[] rootSealed, X509CertificateHolder crossSigned, String intermediateId,
      X509CertificateHolder intermediate, byte[] intermediateSealed) {}

  private Made make(String kind, Authorities.Authority oldRoot, byte[] oldRootSealed) throws KeyVault.WrongSecret {
    KeyVault vault = authorities.vault();
    PrivateKey oldRootKey = authorities.key(new Authorities.Stored(oldRoot.id(), "root", null, oldRoot.state(), null, null, oldRootSealed));
    Instant now = Instant.now();
    String interId = Ids.next("ca");
    KeyPair inter = Pki.p256();
    if ("intermediate".equals(kind)) {
      X509CertificateHolder cert = Pki.intermediate(inter.getPublic(), "MeshCA intermediate " + interId, oldRoot.certificate(), oldRootKey, now,
          authorities.intermediateLifetime());
      return new Made(null, null, null, null, interId, cert, vault.seal(interId, inter.getPrivate().getEncoded()));
    }
    String rootId = Ids.next("ca");
    KeyPair root = Pki.p256();
    X509CertificateHolder rootCert = Pki.root(root, "MeshCA root " + rootId, now, authorities.rootLifetime());
    X509CertificateHolder cross = Pki.crossSigned(rootCert, oldRoot.certificate(), oldRootKey, now);
    X509CertificateHolder cert = Pki.intermediate(inter.getPublic(), "MeshCA intermediate " + interId, rootCert, root.getPrivate(), now,
        authorities.intermediateLifetime());
    return new Made(rootId, rootCert, vault.seal(rootId, root.getPrivate().getEncoded()), cross, interId, cert,
        vault.seal(interId, inter.getPrivate().getEncoded()));
  }
}
