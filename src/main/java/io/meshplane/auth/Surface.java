package io.meshplane.auth;

import static io.meshplane.auth.Permission.ACL_READ;
import static io.meshplane.auth.Permission.ACL_WRITE;
import static io.meshplane.auth.Permission.AUDIT_READ;
import static io.meshplane.auth.Permission.EVENTS_READ;
import static io.meshplane.auth.Permission.HEARTBEAT;
import static io.meshplane.auth.Permission.NODES_ENROLL;
import static io.meshplane.auth.Permission.NODES_OPERATE;
import static io.meshplane.auth.Permission.NODES_READ;
import static io.meshplane.auth.Permission.NODES_SERVICES;

import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The surface → permissions table of SPEC §3, the one place it lives. A token's surface decides what
 * it may do; its team and environment decide where.
 */
public enum Surface {
  ADMIN(EnumSet.complementOf(EnumSet.of(HEARTBEAT))),
  OPERATOR(EnumSet.of(NODES_READ, NODES_ENROLL, NODES_OPERATE, NODES_SERVICES, ACL_READ, ACL_WRITE, AUDIT_READ, EVENTS_READ)),
  ENROLLMENT(EnumSet.of(NODES_ENROLL)),
  PIPELINE(EnumSet.of(NODES_READ, NODES_SERVICES)),
  MONITORING(EnumSet.of(NODES_READ, ACL_READ, AUDIT_READ, EVENTS_READ)),
  /** Issued to one node at enrollment; never creatable through the token API. */
  AGENT(EnumSet.of(HEARTBEAT));

  private final Set<Permission> permissions;
  private final List<String> permissionNames;
  public final String wire;

  Surface(Set<Permission> permissions) {
    this.permissions = java.util.Collections.unmodifiableSet(permissions);
    this.permissionNames = permissions.stream().map(p -> p.wire).sorted().toList();
    this.wire = name().toLowerCase(Locale.ROOT);
  }

  public boolean grants(Permission p) {
    return permissions.contains(p);
  }

  public Set<Permission> permissions() {
    return permissions;
  }

  /** The permissions' wire names, sorted (computed once). */
  public List<String> permissionNames() {
    return permissionNames;
  }

  /** The surface with this wire name, or null. */
  public static Surface parse(String wire) {
    for (Surface s : values()) {
      if (s.wire.equals(wire)) return s;
    }
    return null;
  }
}
