package io.meshplane.access;

import java.util.Locale;

/**
 * The surfaces of API.md §4: what a token is meant for. What each may do is in the {@link Grants}
 * table, together with the panel's roles.
 */
public enum Surface {
  ADMIN,
  OPERATOR,
  ENROLLMENT,
  PIPELINE,
  MONITORING,
  /** Issued to one node at enrollment; never creatable through the token API. */
  AGENT;

  public final String wire = name().toLowerCase(Locale.ROOT);

  /** The surface with this wire name, or null. */
  public static Surface parse(String wire) {
    for (Surface s : values()) {
      if (s.wire.equals(wire)) return s;
    }
    return null;
  }
}
