package io.meshplane.audit;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.meshplane.access.Boundary;
import io.meshplane.access.Caller;
import io.meshplane.access.Denials;
import io.meshplane.common.NameFilter;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit trail (API.md §7) and its SQL. A change and its event go in the same transaction
 * ({@link #record} takes the caller's connection); a denied attempt, which changes nothing, gets its
 * own insert ({@link #refuse}, the {@link Denials} of every guard and service). Events carry ids and
 * names, never secrets. This package knows callers only as {@link Actor}s and imports no feature.
 */
public final class AuditLog implements Denials {
  private static final Logger LOG = LoggerFactory.getLogger(AuditLog.class);
  private static final String INSERT = """
      INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id,
                                outcome, request_id, source_ip, team, environment, details, target_name)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)""";
  /**
   * A page of the trail. An actor name is matched whole in the byte-wise ("C" collation) indexes
   * {@code audit_events_scope_actor_name_time} (V18, inside a team and environment) and
   * {@code audit_events_actor_name_time} (V16, every team): after the name they are in the page's
   * order, so a page reads its own rows ({@link NameFilter} says why not a prefix).
   */
  private static final String LIST = "SELECT id, at, actor_type, actor_id, actor_name, action, target_type, target_id, target_name, outcome, "
      + "request_id, source_ip, team, environment, details FROM audit_events WHERE " + Sql.inScope(1, 2)
      + " AND ($3::text IS NULL OR actor_id = $3)"
      + " AND ($4::text IS NULL OR action = $4)"
      + " AND ($5::timestamptz IS NULL OR at >= $5)"
      + " AND ($6::timestamptz IS NULL OR (at, id) < ($6, $7))"
      + " AND ($9::text IS NULL OR actor_name COLLATE \"C\" = $9)"
      + " ORDER BY at DESC, id DESC LIMIT $8";

  private final Pool pool;
  /** Repeated denials of one actor for one action, audited at most once per window (see {@link #refuse}). */
  private final Cache<String, Boolean> recentDenials = Caffeine.newBuilder()
      .maximumSize(100_000).expireAfterWrite(Duration.ofMinutes(10)).executor(Runnable::run).build();

  private final Pool reads;

  public AuditLog(Pool pool) {
    this(pool, pool);
  }

  /** @param reads the read pool (its own connections, postgres.read_timeout per statement) for the trail's pages */
  public AuditLog(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  /** Inserts the event on {@code client}: pass the transaction's connection so the event commits with the change. */
  public Future<Void> record(SqlClient client, AuditEvent e) {
    return client.preparedQuery(INSERT).execute(Tuple.from(new Object[] {
        e.id(), e.at().atOffset(ZoneOffset.UTC), e.actor().type(), e.actor().id(), e.actor().name(), e.action(), e.targetType(),
        e.targetId(), e.outcome(), e.requestId(), e.sourceIp(), e.team(), e.environment(), e.details(), e.targetName()})).mapEmpty();
  }

  /** A successful change by {@code caller}, placed in the target's team and environment, in the change's transaction. */
  public Future<Void> success(SqlClient tx, Caller caller, RequestInfo request, String action, String targetType, String targetId,
      String team, String environment) {
    return record(tx, AuditEvent.of(Actor.of(caller), request, action, targetType, targetId, AuditEvent.SUCCESS, team, environment));
  }

  /** As {@link #success}, with details (a policy update's old and new version). */
  public Future<Void> success(SqlClient tx, Caller caller, RequestInfo request, String action, String targetType, String targetId,
      String team, String environment, io.vertx.core.json.JsonObject details) {
    return record(tx, AuditEvent.of(Actor.of(caller), request, action, targetType, targetId, AuditEvent.SUCCESS, team, environment)
        .with(details));
  }

  /** A successful change of a named target (a node, token or user: the trail shows the name next to the id). */
  public Future<Void> success(SqlClient tx, Caller caller, RequestInfo request, String action, Target target, String team,
      String environment) {
    return success(tx, caller, request, action, target, team, environment, null);
  }

  /** As {@link #success(SqlClient, Caller, RequestInfo, String, Target, String, String)}, with details (null: none). */
  public Future<Void> success(SqlClient tx, Caller caller, RequestInfo request, String action, Target target, String team,
      String environment, io.vertx.core.json.JsonObject details) {
    return record(tx, AuditEvent.of(Actor.of(caller), request, action, target.type(), target.id(), AuditEvent.SUCCESS, team, environment)
        .with(details).named(target.name()));
  }

  /**
   * Records a denied attempt in its own insert, placed in the caller's boundary, then fails with the
   * refusal; the denial is answered whether or not the write works. A denial a machine repeats on its
   * own schedule ({@code repeatable}: an agent of a deleted node heartbeating every 30 s with its
   * revoked credential) is audited at most once per ten minutes per actor and action, so a zombie agent
   * cannot turn the audit table into a write load.
   */
  @Override
  public <T> Future<T> refuse(Caller caller, RequestInfo request, String action, String targetType, String targetId, Refusal refusal,
      boolean repeatable) {
    if (repeatable && recentDenials.asMap().putIfAbsent(caller.id() + " " + action, Boolean.TRUE) != null) {
      return Future.failedFuture(refusal);
    }
    AuditEvent e = AuditEvent.of(Actor.of(caller), request, action, targetType, targetId, AuditEvent.DENIED, caller.team(),
        caller.environment());
    return record(pool, e).recover(t -> {
      LOG.warn("[request: {}] could not audit denied {} by {}: {}", e.requestId(), e.action(), e.actor().id(), t.getMessage());
      return Future.succeededFuture();
    }).compose(v -> Future.failedFuture(refusal));
  }

  /**
   * A page of the trail inside {@code boundary}, newest first, after the event ({@code afterAt},
   * {@code afterId}) when given; {@code limit} rows at most. {@code actorName} is the whole
   * {@code actor.name} (case-sensitive), null for any.
   */
  public Future<List<AuditEvent>> list(Boundary boundary, String actorId, String actorName, String action, Instant since, Instant afterAt,
      String afterId, int limit) {
    Tuple args = Tuple.from(new Object[] {boundary.team(), boundary.environment(), actorId, action, Sql.odt(since), Sql.odt(afterAt),
        afterId, limit, actorName});
    return reads.preparedQuery(LIST).execute(args).map(rows -> Sql.list(rows, AuditLog::map));
  }

  private static AuditEvent map(Row r) {
    return new AuditEvent(r.getString("id"), r.getOffsetDateTime("at").toInstant(),
        new Actor(r.getString("actor_type"), r.getString("actor_id"), r.getString("actor_name")), r.getString("action"),
        r.getString("target_type"), r.getString("target_id"), r.getString("target_name"), r.getString("outcome"), r.getString("request_id"),
        r.getString("source_ip"), r.getString("team"), r.getString("environment"), (io.vertx.core.json.JsonObject) r.getJson("details"));
  }
}
