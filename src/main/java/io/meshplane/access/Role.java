package io.meshplane.access;

import java.util.Locale;

/** The panel's roles for people (API.md §17); what each may do is in the {@link Grants} table. */
public enum Role {
  ADMIN,
  OPERATOR,
  VIEWER;

  public final String wire = name().toLowerCase(Locale.ROOT);

  /** The role with this wire name, or null. */
  public static Role parse(String wire) {
    for (Role r : values()) {
      if (r.wire.equals(wire)) return r;
    }
    return null;
  }
}
