package io.meshplane.auth;

import java.util.List;

/**
 * A verified caller: the token's id ({@code jti}), name, scope and expiry, and for agent tokens the
 * node it belongs to. Built from the signed claims alone, so the hot path needs no database.
 */
public record Principal(String tokenId, String name, Scope scope, long expiresAtMillis, String nodeId) {
  public boolean may(Permission p) {
    return scope.surface().grants(p);
  }

  public List<String> permissionNames() {
    return scope.surface().permissionNames();
  }
}
