package io.meshplane.node;

import io.meshplane.common.Refusal;
import java.util.List;

/**
 * One key per node: a node's public key is its identity on the mesh, so no two nodes (of any team)
 * may hold the same current key. Enrollment is refused by the database's unique index on the current
 * key (V12); a heartbeat reporting another node's key is refused by the heartbeat route, asking this
 * replica's model ({@link NodePolicy#keyHolder}); the write-behind never stores such a key (see the
 * flush statement), whatever a lagging replica let through.
 */
public final class NodeKeys {
  /** The unique index on a node's current key (V12). */
  public static final String CONSTRAINT = "nodes_current_key";
  public static final String CODE = "key_in_use";

  private NodeKeys() {}

  /** 409 naming {@code public_key}; it says nothing of which node holds the key, nor of its team. */
  public static Refusal inUse() {
    return new Refusal(Refusal.Kind.CONFLICT, CODE, "public_key: is the key of another node of the mesh; a node's key is its identity",
        List.of(new Refusal.FieldError("public_key", "is the key of another node of the mesh")));
  }
}
