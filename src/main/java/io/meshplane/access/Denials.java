package io.meshplane.access;

import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;

/**
 * The one way to refuse a caller on the record (API.md §7: denied attempts are audited): records the
 * denial, then fails with the refusal. Implemented by the audit trail; used by the route guard and by
 * services that refuse on their own rules (no escalation, scope).
 */
public interface Denials {
  /**
   * @param target the denied action's target type and id, or nulls
   * @param repeatable true for denials a machine repeats on its own schedule (audited once per window)
   */
  <T> Future<T> refuse(Caller caller, RequestInfo request, String action, String targetType, String targetId, Refusal refusal,
      boolean repeatable);
}
