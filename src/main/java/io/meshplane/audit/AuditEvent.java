package io.meshplane.audit;

import io.meshplane.common.Addresses;
import io.meshplane.common.Ids;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.json.JsonObject;
import java.time.Instant;

/**
 * One entry of the audit trail (API.md §7). {@code team}/{@code environment} place the event inside a
 * scope (the target's, or for a denied attempt the actor's) so audit readers see only their own.
 * {@code details} is null for most actions; {@code targetName} is the target's name when the action
 * knows it (null for events recorded before names were, and for targets without one).
 */
public record AuditEvent(
    String id,
    Instant at,
    Actor actor,
    String action,
    String targetType,
    String targetId,
    String targetName,
    String outcome,
    String requestId,
    String sourceIp,
    String team,
    String environment,
    JsonObject details) {

  public static final String SUCCESS = "success";
  public static final String DENIED = "denied";
  public static final String FAILED = "failed";

  /** A new event, now, for a request (or {@link RequestInfo#NONE}). */
  public static AuditEvent of(Actor actor, RequestInfo request, String action, String targetType, String targetId, String outcome,
      String team, String environment) {
    return new AuditEvent(Ids.next("ev"), Times.now(), actor, action, targetType, targetId, null, outcome, request.requestId(),
        Addresses.canonical(request.sourceAddress()), team, environment, null);
  }

  /** The same event with details (what the action has more to say: a policy update's old and new version). */
  public AuditEvent with(JsonObject more) {
    return new AuditEvent(id, at, actor, action, targetType, targetId, targetName, outcome, requestId, sourceIp, team, environment, more);
  }

  /** The same event with the target's name as it is now (a node's, token's or user's name), so that the trail reads without lookups. */
  public AuditEvent named(String name) {
    return new AuditEvent(id, at, actor, action, targetType, targetId, name, outcome, requestId, sourceIp, team, environment, details);
  }

  public JsonObject toJson() {
    return new JsonObject()
        .put("id", id)
        .put("at", Times.format(at))
        .put("actor", new JsonObject().put("type", actor.type()).put("id", actor.id()).put("name", actor.name()))
        .put("action", action)
        .put("target", targetType == null ? null : new JsonObject().put("type", targetType).put("id", targetId).put("name", targetName))
        .put("outcome", outcome)
        .put("request_id", requestId)
        // rows recorded before addresses were written in their usual form read the same as new ones
        .put("source_ip", Addresses.canonical(sourceIp))
        .put("team", team)
        .put("environment", environment)
        .put("details", details);
  }
}
