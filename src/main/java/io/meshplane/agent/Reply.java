package io.meshplane.agent;

import io.vertx.core.http.ConnectionPoolTooBusyException;
import io.vertx.core.http.HttpClosedException;
import io.vertx.core.json.JsonObject;
import java.net.ConnectException;
import java.util.concurrent.TimeoutException;

/**
 * What came back from one request to a coordinator, classified once for the reference agent and the
 * simulator alike: the outcome label used in logs and metrics, the error kind, the parsed body.
 *
 * @param status HTTP status, 0 when no answer arrived
 * @param body the parsed answer (2xx) or problem (4xx/5xx), or null
 * @param error null when accepted; else {@code connect}, {@code timeout}, {@code closed}, {@code pool_busy},
 *     {@code io}, {@code invalid_answer} or {@code http_<status>}
 * @param cause what the transport said when no answer arrived ({@code Connection refused: ...}), or null
 * @param retryAfterMs the {@code Retry-After} the coordinator asked for, 0 if none
 * @param bytesIn bytes of the answer body
 */
record Reply(int status, JsonObject body, String error, String cause, long retryAfterMs, int bytesIn) {
  /** How an exchange ended, as the {@code outcome} label of {@code mesh_agent_heartbeats_total}. */
  enum Outcome {
    /** Accepted (2xx with a JSON answer). */
    OK("ok"),
    /** No usable answer: connection refused or reset, timeout, a 5xx other than 503, an unreadable answer. */
    ERROR("error"),
    /** The coordinator is there but cannot serve now: 503 (not ready, cannot store) or 429. */
    UNAVAILABLE("unavailable"),
    /** Refused for good reason: 4xx (revoked credential, deleted node, invalid request). */
    REJECTED("rejected");

    final String label;

    Outcome(String label) {
      this.label = label;
    }
  }

  Outcome outcome() {
    if (error == null) return Outcome.OK;
    if (status == 503 || status == 429) return Outcome.UNAVAILABLE;
    if (status >= 400 && status < 500) return Outcome.REJECTED;
    return Outcome.ERROR;
  }

  /** True when the next coordinator may do better: this one is down, broken or not ready. */
  boolean coordinatorsFault() {
    Outcome o = outcome();
    return o == Outcome.ERROR || status == 503;
  }

  /** The problem's {@code code} ({@code token_revoked}, ...), or null. */
  String problemCode() {
    return body != null && body.getValue("code") instanceof String s ? s : null;
  }

  /** One line for logs: {@code 401 token_revoked: the token was revoked} or {@code connect: Connection refused}. */
  String describe() {
    if (status == 0) return cause == null ? error : error + ": " + cause;
    StringBuilder sb = new StringBuilder().append(status);
    String code = problemCode();
    if (code != null) sb.append(' ').append(code);
    if (body != null && body.getValue("detail") instanceof String d && !d.isEmpty()) {
      sb.append(": ").append(d.length() > 200 ? d.substring(0, 200) + "…" : d);
    }
    return sb.toString();
  }

  static Reply failure(Throwable t) {
    String kind;
    if (t instanceof ConnectException || (t.getCause() instanceof ConnectException)) kind = "connect";
    else if (t instanceof TimeoutException) kind = "timeout";
    else if (t instanceof ConnectionPoolTooBusyException) kind = "pool_busy";
    else if (t instanceof HttpClosedException) kind = "closed";
    else kind = "io";
    return new Reply(0, null, kind, t.getMessage(), 0, 0);
  }
}
