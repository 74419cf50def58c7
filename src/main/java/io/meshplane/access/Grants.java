package io.meshplane.access;

import static io.meshplane.access.Permission.ACL_READ;
import static io.meshplane.access.Permission.ACL_WRITE;
import static io.meshplane.access.Permission.AUDIT_READ;
import static io.meshplane.access.Permission.EVENTS_READ;
import static io.meshplane.access.Permission.HEARTBEAT;
import static io.meshplane.access.Permission.INGRESS_READ;
import static io.meshplane.access.Permission.INGRESS_WRITE;
import static io.meshplane.access.Permission.WAF_READ;
import static io.meshplane.access.Permission.WAF_WRITE;
import static io.meshplane.access.Permission.MESHCA_MANAGE;
import static io.meshplane.access.Permission.MESHCA_READ;
import static io.meshplane.access.Permission.MESHCA_REVOKE;
import static io.meshplane.access.Permission.NODES_ENROLL;
import static io.meshplane.access.Permission.NODES_OPERATE;
import static io.meshplane.access.Permission.NODES_READ;
import static io.meshplane.access.Permission.NODES_SERVICES;
import static io.meshplane.access.Permission.TOKENS_READ;
import static io.meshplane.access.Permission.TOKENS_WRITE;
import static io.meshplane.access.Permission.USERS_MANAGE;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one table of who may do what (API.md §4 and §17): each token surface and each panel role, with its
 * permissions and the token surfaces it may mint and manage (create, rotate, revoke). Every check in
 * the code asks a {@link Caller}, which carries its row; nothing compares a surface or a role by name.
 */
public final class Grants {
  /** One row: a surface's or a role's permissions, and the token surfaces it may mint and manage. */
  public record Entry(String kind, String name, Set<Permission> permissions, List<String> permissionNames, Set<Surface> mintable) {
    public boolean grants(Permission p) {
      return permissions.contains(p);
    }
  }

  private static final Set<Permission> ADMIN_SURFACE = EnumSet.of(TOKENS_READ, TOKENS_WRITE, NODES_READ, NODES_ENROLL, NODES_OPERATE,
      NODES_SERVICES, ACL_READ, ACL_WRITE, INGRESS_READ, INGRESS_WRITE, WAF_READ, WAF_WRITE, AUDIT_READ, EVENTS_READ, MESHCA_READ, MESHCA_REVOKE,
      MESHCA_MANAGE);
  private static final Set<Permission> OPERATOR_SURFACE = EnumSet.of(NODES_READ, NODES_ENROLL, NODES_OPERATE, NODES_SERVICES,
      ACL_READ, ACL_WRITE, INGRESS_READ, INGRESS_WRITE, WAF_READ, WAF_WRITE, AUDIT_READ, EVENTS_READ, MESHCA_READ, MESHCA_REVOKE);
  private static final Set<Permission> MONITORING_SURFACE = EnumSet.of(NODES_READ, ACL_READ, INGRESS_READ, WAF_READ, AUDIT_READ, EVENTS_READ,
      MESHCA_READ);
  /** Every surface a token can be created with (agent tokens come from enrollment only). */
  private static final Set<Surface> ALL_MINTABLE = EnumSet.of(Surface.ADMIN, Surface.OPERATOR, Surface.ENROLLMENT, Surface.PIPELINE,
      Surface.MONITORING);
  private static final Set<Surface> NON_ADMIN = EnumSet.of(Surface.OPERATOR, Surface.ENROLLMENT, Surface.PIPELINE, Surface.MONITORING);

  private static final Map<Surface, Entry> SURFACES = new EnumMap<>(Surface.class);
  private static final Map<Role, Entry> ROLES = new EnumMap<>(Role.class);

  static {
    surface(Surface.ADMIN, ADMIN_SURFACE, ALL_MINTABLE);
    surface(Surface.OPERATOR, OPERATOR_SURFACE, Set.of());
    surface(Surface.ENROLLMENT, EnumSet.of(NODES_ENROLL), Set.of());
    surface(Surface.PIPELINE, EnumSet.of(NODES_READ, NODES_SERVICES), Set.of());
    surface(Surface.MONITORING, MONITORING_SURFACE, Set.of());
    surface(Surface.AGENT, EnumSet.of(HEARTBEAT), Set.of());
    role(Role.ADMIN, union(ADMIN_SURFACE, EnumSet.of(USERS_MANAGE)), ALL_MINTABLE);
    // an operator also manages the tokens of scripts, but never admin tokens
    role(Role.OPERATOR, union(OPERATOR_SURFACE, EnumSet.of(TOKENS_READ, TOKENS_WRITE)), NON_ADMIN);
    role(Role.VIEWER, MONITORING_SURFACE, Set.of());
  }

  private Grants() {}

  public static Entry of(Surface s) {
    return SURFACES.get(s);
  }

  public static Entry of(Role r) {
    return ROLES.get(r);
  }

  private static void surface(Surface s, Set<Permission> permissions, Set<Surface> mintable) {
    SURFACES.put(s, entry("surface", s.wire, permissions, mintable));
  }

  private static void role(Role r, Set<Permission> permissions, Set<Surface> mintable) {
    ROLES.put(r, entry("role", r.wire, permissions, mintable));
  }

  private static Entry entry(String kind, String name, Set<Permission> permissions, Set<Surface> mintable) {
    Set<Permission> p = Collections.unmodifiableSet(EnumSet.copyOf(permissions));
    return new Entry(kind, name, p, p.stream().map(x -> x.wire).sorted().toList(),
        mintable.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(mintable)));
  }

  private static Set<Permission> union(Set<Permission> a, Set<Permission> b) {
    Set<Permission> u = EnumSet.copyOf(a);
    u.addAll(b);
    return u;
  }
}
