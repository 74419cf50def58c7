package io.meshplane.auth;

/** What a caller may do (SPEC §3). Routes declare exactly one; surfaces grant sets of them. */
public enum Permission {
  TOKENS_READ("tokens:read"),
  TOKENS_WRITE("tokens:write"),
  NODES_READ("nodes:read"),
  NODES_ENROLL("nodes:enroll"),
  NODES_OPERATE("nodes:operate"),
  NODES_SERVICES("nodes:services"),
  ACL_READ("acl:read"),
  ACL_WRITE("acl:write"),
  AUDIT_READ("audit:read"),
  EVENTS_READ("events:read"),
  HEARTBEAT("heartbeat");

  public final String wire;

  Permission(String wire) {
    this.wire = wire;
  }
}
