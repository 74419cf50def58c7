package io.meshplane.access;

import io.meshplane.common.Refusal;

/**
 * A way in that knew the caller and still refused the request (the panel: a valid session whose
 * mutating request lacks the matching CSRF token): the guard records the refusal under that caller's
 * name, as any other denial, and answers the refusal.
 */
public final class Refused extends RuntimeException {
  private final Caller caller;
  private final Refusal refusal;

  public Refused(Caller caller, Refusal refusal) {
    super(refusal.getMessage(), null, false, false);
    this.caller = caller;
    this.refusal = refusal;
  }

  public Caller caller() {
    return caller;
  }

  public Refusal refusal() {
    return refusal;
  }
}
