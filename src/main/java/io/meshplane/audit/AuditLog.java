package io.meshplane.audit;

import io.meshplane.auth.Principal;
import io.meshplane.common.Ids;
import io.meshplane.http.RequestIds;
import io.meshplane.common.Times;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.vertx.core.Future;
import io.vertx.ext.web.RoutingContext;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.ZoneOffset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes audit events. A change and its event go in the same transaction ({@link #record} takes the
 * caller's connection); a denied attempt, which changes nothing, gets its own insert ({@link #denied}).
 * Events carry ids and names, never secrets.
 */
public final class AuditLog {
  private static final Logger LOG = LoggerFactory.getLogger(AuditLog.class);
  private static final String INSERT = """
      INSERT INTO audit_events (id, at, actor_type, actor_id, actor_name, action, target_type, target_id,
                                outcome, request_id, source_ip, team, environment)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)""";

  private final Pool pool;
  /** Repeated denials of one actor for one action, audited at most once per window (see {@link #deniedRepeatable}). */
  private final Cache<String, Boolean> recentDenials = Caffeine.newBuilder()
      .maximumSize(100_000).expireAfterWrite(Duration.ofMinutes(10)).executor(Runnable::run).build();

  public AuditLog(Pool pool) {
    this.pool = pool;
  }

  /**
   * For denials a machine repeats on its own schedule (an agent of a deleted node heartbeating every
   * 30 s with its revoked credential): the first one in ten minutes per actor and action is audited,
   * the repeats are not, so a zombie agent cannot turn the audit table into a write load.
   */
  public Future<Void> deniedRepeatable(AuditEvent e) {
    String key = e.actorId() + " " + e.action();
    if (recentDenials.asMap().putIfAbsent(key, Boolean.TRUE) != null) return Future.succeededFuture();
    return denied(e);
  }

  /** An event for a request made with a token: actor, request id and source address come from the request. */
  public static AuditEvent event(RoutingContext ctx, Principal actor, String action, String targetType, String targetId,
      String outcome, String team, String environment) {
    return new AuditEvent(Ids.next("ev"), Times.now(), actor.nodeId() != null ? "node" : "token",
        actor.nodeId() != null ? actor.nodeId() : actor.tokenId(), actor.name(), action, targetType, targetId, outcome,
        RequestIds.of(ctx), ctx.request().remoteAddress() == null ? null : ctx.request().remoteAddress().host(), team, environment);
  }

  /** Inserts the event on {@code client}: pass the transaction's connection so the event commits with the change. */
  public Future<Void> record(SqlClient client, AuditEvent e) {
    return client.preparedQuery(INSERT).execute(Tuple.from(new Object[] {
        e.id(), e.at().atOffset(ZoneOffset.UTC), e.actorType(), e.actorId(), e.actorName(), e.action(), e.targetType(),
        e.targetId(), e.outcome(), e.requestId(), e.sourceIp(), e.team(), e.environment()})).mapEmpty();
  }

  /** Records a denied attempt in its own insert. Never fails: the denial is answered whether or not the write works. */
  public Future<Void> denied(AuditEvent e) {
    return record(pool, e).recover(t -> {
      LOG.warn("[request: {}] could not audit denied {} by {}: {}", e.requestId(), e.action(), e.actorId(), t.getMessage());
      return Future.succeededFuture();
    });
  }
}
