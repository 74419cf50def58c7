package io.meshplane.access;

import java.util.List;

/**
 * Who is making a request, resolved once per request by an {@link Authenticator}: a token (scripts,
 * automation), a node (its agent credential) or a user (a person in the panel). It carries its
 * {@link Grants} row, so every check (may it do this, may it mint that surface, does its boundary
 * cover that resource) is asked here, whatever the way in. Immutable; for tokens it is cached with the
 * verified token.
 *
 * @param id the token's id, the node's id or the user's id (the audit trail's actor id)
 * @param credential the credential the request carried (a token id; a session for users), for revocation
 * @param expiresAtMillis when that credential stops working
 */
public record Caller(Kind kind, String id, String name, Boundary boundary, Grants.Entry grants, String credential, long expiresAtMillis) {
  public enum Kind {
    TOKEN("token"), NODE("node"), USER("user");

    public final String wire;

    Kind(String wire) {
      this.wire = wire;
    }
  }

  public boolean may(Permission p) {
    return grants.grants(p);
  }

  /** May this caller create (or rotate, or revoke) a token of this surface? Its boundary is checked separately. */
  public boolean mayMint(Surface s) {
    return grants.mintable().contains(s);
  }

  /** The node an agent credential belongs to, or null for other callers. */
  public String nodeId() {
    return kind == Kind.NODE ? id : null;
  }

  public String team() {
    return boundary.team();
  }

  public String environment() {
    return boundary.environment();
  }

  public List<String> permissionNames() {
    return grants.permissionNames();
  }
}
