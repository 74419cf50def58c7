package io.meshplane.heartbeat;

import io.meshplane.access.Boundary;
import io.meshplane.common.Sql;
import io.meshplane.common.Times;
import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeCertificates;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * The heartbeat feature's SQL: the live columns of {@code nodes} (heartbeat time, endpoints, routes,
 * reported relay and key, telemetry), which only the write-behind writes, and the node state events
 * ({@code node_events}), which only the staleness monitors write. The record columns belong to the
 * node feature.
 */
public final class LiveRepository {
  /** A node's live columns as last flushed, for seeding the live map after a cold start of the whole cluster. */
  public record Stored(String id, Instant heartbeatAt, String[] endpoints, String reportedRelay, String reportedKey, String[] routes,
      String telemetry, long acknowledgedPeers, long acknowledgedAcl) {}

  /** What one flush statement did: the rows it wrote, and whether it appended a {@code live} entry to the change log (to announce). */
  public record Flushed(int rows, boolean logged) {
    static final Flushed NONE = new Flushed(0, false);

    Flushed plus(Flushed o) {
      return new Flushed(rows + o.rows, logged || o.logged);
    }
  }

  private final Pool pool;

  private final Pool reads;
  /** MeshCA's automatic revocations: a flush that changes a node's current key revokes its certificates of the old one. */
  private final NodeCertificates certificates;

  public LiveRepository(Pool pool) {
    this(pool, pool);
  }

  /** @param reads the read pool (its own connections, postgres.read_timeout per statement) for the events' pages */
  public LiveRepository(Pool pool, Pool reads) {
    this(pool, reads, NodeCertificates.NONE);
  }

  /** @param certificates where a re-key revokes the node's certificates of its old key, in the flush's transaction */
  public LiveRepository(Pool pool, Pool reads, NodeCertificates certificates) {
    this.pool = pool;
    this.reads = reads;
    this.certificates = certificates;
  }

  /**
   * One multi-row write of live fields (UNNEST arrays): a single round trip per batch, only moving
   * heartbeat_at forwards (a row that holds this heartbeat already is not written again). A null field
   * (endpoints, routes, relay, key or telemetry) means "unchanged since this writer's previous write of
   * the row", whose heartbeat time {@code previous} gives: the column keeps its value, and PostgreSQL
   * neither receives nor parses it. A row with a null field is written only if it still holds that
   * previous write (else someone else wrote it since: it is left out of the count, and the caller
   * sends whole rows). The statement also reports which nodes' endpoints, reported relay or reported
   * key it changed: the SET list, which sees the row's old values, compares each new value with the old
   * one into {@code flush_changes} (bits 1, 2, 4), and RETURNING reads that back. The reported key is
   * the last one the agent sent: a heartbeat without one keeps it, and a node's first key is not a
   * change (nor the first flush after the upgrade that added the column). So the node-change
   * events come from what PostgreSQL held, whichever replica wrote the row last, without reading the
   * row a second time.
   *
   * <p>What peers see of a node (its endpoints, its current key, online after its first heartbeat or
   * after being stale; bits 1, 16, 8 and 32: a written heartbeat clears the stale flag) also goes into the change log ({@link ChangeLog}) in the same statement, as one
   * {@code live} entry, so the peer models of every replica learn it in commit order. A flush that
   * changed nothing peers see takes no clock lock and writes no entry.
   *
   * <p>A reported key that is another node's current key is not stored (one key per node: the unique
   * index of V12 backs it); heartbeats carrying one are refused up front, so this guards only against
   * a replica whose model had not yet heard of the other node's key. Two rows of one batch taking the
   * same new key fail the statement on the index, and the batch's halves are written apart: the second
   * then keeps its key.
   *
   * <p>{@code knownPeers}/{@code knownAcl} are the versions the heartbeat acknowledged ({@code -1}: none
   * sent; null: leave the row's as they are). Where they differ from the row's, {@code acknowledged_at}
   * becomes this heartbeat's time (V9): when the node first acknowledged what it holds now.
   *
   * <p>A re-key becomes durable here, whoever asked for it (a re-key operation or the agent on its own):
   * so a batch that carries keys runs in a transaction that first locks (MeshCA, {@link NodeCertificates#rekeying})
   * the certificates of its nodes that record another key than the one sent, then writes the rows, and
   * then revokes those of the nodes whose current key the statement did change (bit 16), with their
   * {@code pki} entries: the key and the revocation of the old key's certificates commit together.
   * Certificates first, then the rows, then the clock: the order a deletion and a revocation keep. A
   * batch without keys (the steady state: a key is sent only when it changed) is one statement, as before.
   */
  public Future<Flushed> flush(String[] ids, Long[] heartbeats, Long[] previous, String[] endpoints, String[] routes,
      String[] relays, String[] keys, String[] telemetry, Long[] knownPeers, Long[] knownAcl) {
    if (certificates == NodeCertificates.NONE || Arrays.stream(keys).allMatch(k -> k == null || k.isEmpty())) {
      return flush(pool, ids, heartbeats, previous, endpoints, routes, relays, keys, telemetry, knownPeers, knownAcl).map(Written::flushed);
    }
    return pool.withTransaction(tx -> certificates.rekeying(tx, ids, keys).compose(pending ->
        flush(tx, ids, heartbeats, previous, endpoints, routes, relays, keys, telemetry, knownPeers, knownAcl).compose(w -> w.rekeyed().isEmpty()
            ? Future.succeededFuture(w.flushed()) : pending.revoke(tx, w.rekeyed()).map(n -> w.flushed()))));
  }

  /** What the flush statement wrote, and the nodes whose current key it changed. */
  private record Written(Flushed flushed, Set<String> rekeyed) {}

  private Future<Written> flush(SqlClient client, String[] ids, Long[] heartbeats, Long[] previous, String[] endpoints, String[] routes,
      String[] relays, String[] keys, String[] telemetry, Long[] knownPeers, Long[] knownAcl) {
    String sql = """
        WITH written AS (
          UPDATE nodes n SET heartbeat_at = (timestamptz 'epoch' + u.hb * interval '1 millisecond'),
                 endpoints = COALESCE(string_to_array(u.ep, ','), n.endpoints), routes = COALESCE(string_to_array(u.rt, ','), n.routes),
                 reported_relay = COALESCE(u.relay, n.reported_relay), reported_key = COALESCE(NULLIF(k.key, ''), n.reported_key),
                 telemetry = COALESCE(u.tel::jsonb, n.telemetry), stale = false, heard = true,
                 acknowledged_peers = CASE WHEN u.kp IS NULL THEN n.acknowledged_peers ELSE NULLIF(u.kp, -1) END,
                 acknowledged_acl = CASE WHEN u.ka IS NULL THEN n.acknowledged_acl ELSE NULLIF(u.ka, -1) END,
                 acknowledged_at = CASE WHEN (u.kp IS NOT NULL AND NULLIF(u.kp, -1) IS DISTINCT FROM n.acknowledged_peers)
                                          OR (u.ka IS NOT NULL AND NULLIF(u.ka, -1) IS DISTINCT FROM n.acknowledged_acl)
                                        THEN (timestamptz 'epoch' + u.hb * interval '1 millisecond') ELSE n.acknowledged_at END,
                 flush_changes = (CASE WHEN COALESCE(string_to_array(u.ep, ','), n.endpoints) IS DISTINCT FROM n.endpoints THEN 1 ELSE 0 END)
                               | (CASE WHEN COALESCE(u.relay, n.reported_relay) IS DISTINCT FROM n.reported_relay THEN 2 ELSE 0 END)
                               | (CASE WHEN n.reported_key <> '' AND COALESCE(NULLIF(k.key, ''), n.reported_key) <> n.reported_key
                                       THEN 4 ELSE 0 END)
                               | (CASE WHEN n.heartbeat_at IS NULL THEN 8 ELSE 0 END)
                               | (CASE WHEN COALESCE(NULLIF(k.key, ''), NULLIF(n.reported_key, ''), n.public_key)
                                            <> COALESCE(NULLIF(n.reported_key, ''), n.public_key) THEN 16 ELSE 0 END)
                               | (CASE WHEN n.stale THEN 32 ELSE 0 END)
          FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int8[],
                      $10::int8[])
               AS u(id, hb, prev, ep, rt, relay, rk, tel, kp, ka)
               -- a reported key that another node holds is not stored (one key per node, V12): the row keeps its key
               CROSS JOIN LATERAL (SELECT CASE WHEN NULLIF(u.rk, '') IS NULL THEN NULL
                                               WHEN EXISTS (SELECT 1 FROM nodes o WHERE o.current_key = u.rk AND o.id <> u.id) THEN ''
                                               ELSE u.rk END AS key) AS k
          WHERE n.id = u.id AND (n.heartbeat_at IS NULL OR n.heartbeat_at < (timestamptz 'epoch' + u.hb * interval '1 millisecond'))
            AND (u.prev IS NULL OR n.heartbeat_at = (timestamptz 'epoch' + u.prev * interval '1 millisecond'))
          RETURNING n.id, n.flush_changes AS c, n.endpoints AS ep, COALESCE(NULLIF(n.reported_key, ''), n.public_key) AS k),
        peer AS (SELECT id, c, ep, k FROM written WHERE c & 57 <> 0),
        """ + String.format(ChangeLog.CLOCK_CTE, "peer") + """
        ,
        logged AS (
          """ + ChangeLog.INSERT_ENTRY + """
          SELECT clock.seq, 'live', jsonb_build_object('nodes',
                 (SELECT jsonb_agg(jsonb_build_object('id', id, 'ep', ep, 'key', k, 'first', c & 40 <> 0)) FROM peer))
          FROM clock)
        SELECT count(*) AS rows, EXISTS (SELECT 1 FROM peer) AS logged,
               (SELECT array_agg(id) FROM written WHERE c & 16 <> 0) AS rekeyed FROM written""";
    return client.preparedQuery(sql)
        .execute(Tuple.tuple().addArrayOfString(ids).addArrayOfLong(heartbeats).addArrayOfLong(previous)
            .addArrayOfString(endpoints).addArrayOfString(routes).addArrayOfString(relays).addArrayOfString(keys)
            .addArrayOfString(telemetry).addArrayOfLong(knownPeers).addArrayOfLong(knownAcl))
        .map(rows -> {
          Row r = rows.iterator().next();
          String[] rekeyed = r.getArrayOfStrings("rekeyed");
          return new Written(new Flushed(r.getInteger("rows"), r.getBoolean("logged")), rekeyed == null ? Set.of() : Set.of(rekeyed));
        });
  }

  /** Which of these ids have no node row (deleted): their live entries are leftovers to drop. */
  public Future<List<String>> missing(String[] ids) {
    return pool.preparedQuery("SELECT u.id FROM UNNEST($1::text[]) AS u(id) WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = u.id)")
        .execute(Tuple.tuple().addArrayOfString(ids))
        .map(rows -> Sql.list(rows, r -> r.getString(0)));
  }

  /**
   * Records state transitions (node.stale / node.online); events of nodes deleted meanwhile are
   * dropped. Completes with whether a change-log entry was appended (a node's online flag changed).
   */
  public Future<Boolean> insertEvents(String[] eventIds, Long[] at, String[] types, String[] nodeIds, Long[] lastHeartbeat) {
    // the events, the nodes' stale flag and the change-log entry peers learn it from, in one statement
    String sql = """
        WITH ev AS (
          INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
          SELECT u.eid, (timestamptz 'epoch' + u.at * interval '1 millisecond'), u.type, n.id, n.name, n.team, n.environment, (timestamptz 'epoch' + u.hb * interval '1 millisecond')
          FROM UNNEST($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[]) AS u(eid, at, type, node_id, hb)
          JOIN nodes n ON n.id = u.node_id
          ON CONFLICT (id) DO NOTHING
          RETURNING node_id, type, at),
        latest AS (SELECT DISTINCT ON (node_id) node_id, type = 'node.stale' AS stale FROM ev ORDER BY node_id, at DESC),
        flagged AS (UPDATE nodes n SET stale = l.stale FROM latest l WHERE n.id = l.node_id AND n.stale <> l.stale RETURNING n.id, n.stale),
        """ + String.format(ChangeLog.CLOCK_CTE, "flagged") + """
        ,
        logged AS (
          """ + ChangeLog.INSERT_ENTRY + """
          SELECT clock.seq, 'online', jsonb_build_object('nodes',
                 (SELECT jsonb_agg(jsonb_build_object('id', id, 'online', NOT stale)) FROM flagged))
          FROM clock)
        SELECT EXISTS (SELECT 1 FROM flagged) AS logged""";
    return pool.preparedQuery(sql)
        .execute(Tuple.tuple().addArrayOfString(eventIds).addArrayOfLong(at).addArrayOfString(types).addArrayOfString(nodeIds)
            .addArrayOfLong(lastHeartbeat))
        .map(rows -> rows.iterator().next().getBoolean(0));
  }

  /** Records a node.policy_drift event (readable at GET /events with the node state events); dropped if the node is gone. */
  public Future<Void> driftEvent(String eventId, String nodeId) {
    return pool.preparedQuery("""
            INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
            SELECT $1, now(), 'node.policy_drift', id, name, team, environment, heartbeat_at FROM nodes WHERE id = $2
            ON CONFLICT (id) DO NOTHING""")
        .execute(Tuple.of(eventId, nodeId)).mapEmpty();
  }

  /** A page of node state events inside {@code boundary}, oldest (or {@code newest}) first, with the filters given (null = any; {@code nodeName} a whole name). */
  public Future<List<JsonObject>> events(Boundary boundary, String afterId, Instant since, String type, String nodeId, String nodeName,
      boolean newest, int limit) {
    // newest first reads the same indexes backwards; a node name is matched whole in node_events_scope_node_name (V18)
    // or node_events_node_name (V16), in id order after the name (common.NameFilter says why not a prefix)
    String sql = "SELECT id, at, type, node_id, node_name, team, environment, last_heartbeat FROM node_events WHERE " + Sql.inScope(1, 2)
        + (newest ? " AND ($3::text IS NULL OR id < $3)" : " AND ($3::text IS NULL OR id > $3)")
        + " AND ($4::timestamptz IS NULL OR at >= $4)"
        + " AND ($5::text IS NULL OR type = $5)"
        + " AND ($6::text IS NULL OR node_id = $6)"
        + " AND ($8::text IS NULL OR node_name COLLATE \"C\" = $8)"
        + (newest ? " ORDER BY id DESC LIMIT $7" : " ORDER BY id LIMIT $7");
    Tuple args = Tuple.from(new Object[] {boundary.team(), boundary.environment(), afterId, Sql.odt(since), type, nodeId, limit, nodeName});
    return reads.preparedQuery(sql).execute(args).map(rows -> Sql.list(rows, r -> new JsonObject()
        .put("id", r.getString("id"))
        .put("at", Times.format(r.getOffsetDateTime("at")))
        .put("type", r.getString("type"))
        .put("node", new JsonObject().put("id", r.getString("node_id")).put("name", r.getString("node_name")))
        .put("team", r.getString("team"))
        .put("environment", r.getString("environment"))
        .put("last_heartbeat", Times.format(r.getOffsetDateTime("last_heartbeat")))));
  }

  /**
   * Reports enrollments never confirmed by a heartbeat: nodes created before {@code cutoff} that have
   * never beaten get one {@code node.enroll_unconfirmed} event each (at most {@code limit} per call;
   * a unique index makes a second report of a node a no-op, whichever replica tries). Completes with
   * the number of events written.
   */
  public Future<Integer> reportUnconfirmed(Instant cutoff, int limit) {
    return pool.preparedQuery("SELECT id FROM nodes n WHERE NOT heard AND created_at < $1 AND NOT EXISTS "
            + "(SELECT 1 FROM node_events e WHERE e.node_id = n.id AND e.type = 'node.enroll_unconfirmed') ORDER BY created_at LIMIT $2")
        .execute(Tuple.of(Sql.odt(cutoff), limit))
        .compose(rows -> {
          if (rows.size() == 0) return Future.succeededFuture(0);
          String[] nodes = Sql.list(rows, r -> r.getString(0)).toArray(new String[0]);
          String[] ids = new String[nodes.length];
          for (int i = 0; i < ids.length; i++) ids[i] = io.meshplane.common.Ids.next("ev");
          return pool.preparedQuery("""
                  INSERT INTO node_events (id, at, type, node_id, node_name, team, environment, last_heartbeat)
                  SELECT u.eid, now(), 'node.enroll_unconfirmed', n.id, n.name, n.team, n.environment, NULL
                  FROM UNNEST($1::text[], $2::text[]) AS u(eid, node_id) JOIN nodes n ON n.id = u.node_id AND NOT n.heard
                  ON CONFLICT DO NOTHING""")
              .execute(Tuple.tuple().addArrayOfString(ids).addArrayOfString(nodes))
              .map(r -> r.rowCount());
        });
  }

  /** Nodes that never sent a heartbeat (the pending count). */
  public Future<Long> countPending() {
    return pool.query("SELECT count(*) FROM nodes WHERE NOT heard").execute()
        .map(rows -> rows.iterator().next().getLong(0));
  }

  /** Nodes with a flushed heartbeat, in id order after {@code afterId}, for seeding the live map. */
  public Future<List<Stored>> withHeartbeat(String afterId, int limit) {
    return pool.preparedQuery("SELECT id, heartbeat_at, endpoints, reported_relay, reported_key, routes, telemetry::text AS telemetry, "
            + "COALESCE(acknowledged_peers, -1) AS kp, COALESCE(acknowledged_acl, -1) AS ka "
            + "FROM nodes WHERE heartbeat_at IS NOT NULL AND id > $1 ORDER BY id LIMIT $2")
        .execute(Tuple.of(afterId, limit))
        .map(rows -> Sql.list(rows, r -> new Stored(r.getString("id"), Sql.instant(r, "heartbeat_at"), r.getArrayOfStrings("endpoints"),
            r.getString("reported_relay"), r.getString("reported_key"), r.getArrayOfStrings("routes"), r.getString("telemetry"),
            r.getLong("kp"), r.getLong("ka"))));
  }
}
