package io.meshplane.common;

/** What services need to know of a request besides its caller: its id (for logs and the audit trail) and source address. */
public record RequestInfo(String requestId, String sourceAddress) {
  /** For work that no request started (the command line, jobs). */
  public static final RequestInfo NONE = new RequestInfo(null, null);
}
