package io.meshplane.access;

/**
 * What a caller may do (API.md §4, §17). Routes declare exactly one; the {@link Grants} table says which
 * surfaces (tokens) and roles (people) hold which.
 */
public enum Permission {
  TOKENS_READ("tokens:read"),
  TOKENS_WRITE("tokens:write"),
  NODES_READ("nodes:read"),
  NODES_ENROLL("nodes:enroll"),
  NODES_OPERATE("nodes:operate"),
  NODES_SERVICES("nodes:services"),
  ACL_READ("acl:read"),
  ACL_WRITE("acl:write"),
  /** Ingress routes (API.md §18): reading them. */
  INGRESS_READ("ingress:read"),
  /** Ingress routes: creating, replacing and deleting them. */
  INGRESS_WRITE("ingress:write"),
  /** Traffic policies (the WAF's, API.md §20): reading them, their history and previews. */
  WAF_READ("waf:read"),
  /** Traffic policies: storing a new version and rolling back. */
  WAF_WRITE("waf:write"),
  AUDIT_READ("audit:read"),
  EVENTS_READ("events:read"),
  HEARTBEAT("heartbeat"),
  /** MeshCA: the bundle, the CRL and the issued certificates. */
  MESHCA_READ("meshca:read"),
  /** MeshCA: revoking a node certificate. */
  MESHCA_REVOKE("meshca:revoke"),
  /** MeshCA: managing the CA itself (intermediates, rotation): admin only. */
  MESHCA_MANAGE("meshca:manage"),
  /** Managing panel users: the admin role only (API.md §17); no token surface holds it. */
  USERS_MANAGE("users:manage");

  public final String wire;

  Permission(String wire) {
    this.wire = wire;
  }
}
