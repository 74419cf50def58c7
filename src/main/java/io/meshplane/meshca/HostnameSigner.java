package io.meshplane.meshca;

import io.meshplane.access.Caller;
import io.meshplane.audit.Actor;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Hostname certificates (docs/API.md, "A hostname certificate"): an ingress node asks, with its agent
 * credential, for one certificate naming the hostnames of the {@code tls: meshca} routes it serves, and
 * gets it from {@link NodeSigner} (the same CSR check, budget, pool, lifetime, record, audit and
 * revocation as its node certificate). What the node may name is read from PostgreSQL at the request
 * (one point read of the node by its primary key, with its team+environment's {@code tls: meshca}
 * routes whose {@code ingress_tag} it carries): a hostname it does not serve is refused (403
 * {@code hostname_not_served}, the field {@code hostnames[i]} and the hostname named), and the route
 * audits the refusal. A node gets at most one hostname certificate per {@link #REISSUE_AFTER} for the
 * same names (per {@link #CHANGE_AFTER} for other names), so that no node can spend the cluster's
 * signing budget by asking again and again.
 */
final class HostnameSigner {
  /** The most hostnames one certificate names: an ingress node's {@code tls: meshca} hostnames. */
  static final int MAX_HOSTNAMES = 64;
  /** A node's latest hostname certificate younger than this (or half the lifetime) holds back a request for the same names. */
  static final Duration REISSUE_AFTER = Duration.ofSeconds(60);
  /** ... and one for other names (its routes changed) for this long. */
  static final Duration CHANGE_AFTER = Duration.ofSeconds(10);

  /** A route's hostname as the ingress feature accepts it (docs/API.md §19): LDH labels, at least two, optionally {@code *.} first. */
  static final java.util.regex.Pattern HOSTNAME =
      java.util.regex.Pattern.compile("^(\\*\\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$");

  /** A checked request: the CSR and the hostnames, lower-cased, each once, in the order given. */
  record Request(String csr, List<String> hostnames) {}

  private final Pool pool;
  private final NodeSigner signer;
  private final Duration lifetime;

  HostnameSigner(Pool pool, NodeSigner signer, Duration lifetime) {
    this.pool = pool;
    this.signer = signer;
    this.lifetime = lifetime;
  }

  /** The body {@code {csr, hostnames}}: each field checked, 400 naming it; any other field is a 400 naming it. */
  static Request parse(JsonObject body) {
    List<Refusal.FieldError> errors = new ArrayList<>();
    for (String k : body.fieldNames()) {
      if (!k.equals("csr") && !k.equals("hostnames")) errors.add(new Refusal.FieldError(k, "is not a field of a hostname certificate request (csr, hostnames)"));
    }
    Object csr = body.getValue("csr");
    if (!(csr instanceof String s) || s.isBlank()) errors.add(new Refusal.FieldError("csr", "is missing: a PKCS#10 CSR in PEM"));
    List<String> names = new ArrayList<>();
    Object list = body.getValue("hostnames");
    if (!(list instanceof JsonArray a) || a.isEmpty() || a.size() > MAX_HOSTNAMES) {
      errors.add(new Refusal.FieldError("hostnames", "must be an array of 1 to " + MAX_HOSTNAMES + " hostnames"));
    } else {
      for (int i = 0; i < a.size(); i++) {
        if (!(a.getValue(i) instanceof String h) || h.length() > 253 || !HOSTNAME.matcher(h.toLowerCase(Locale.ROOT)).matches()) {
          errors.add(new Refusal.FieldError("hostnames[" + i + "]", "must be a DNS name (LDH labels, optionally *. first) of at most 253 characters"));
        } else if (names.contains(h.toLowerCase(Locale.ROOT))) {
          errors.add(new Refusal.FieldError("hostnames[" + i + "]", "names " + h + " a second time"));
        } else {
          names.add(h.toLowerCase(Locale.ROOT));
        }
      }
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
    return new Request((String) csr, List.copyOf(names));
  }

  /**
   * A hostname certificate for the calling node: {@link MeshcaModule.Issuance.Issued}, or
   * {@link MeshcaModule.Issuance.Deferred} (the budget, the pool, or the node's latest one is too young).
   * Fails with 403 {@code hostname_not_served} naming the first hostname the node does not serve, 400
   * {@code csr} for a CSR that does not check out, 404 when the node is gone.
   */
  Future<MeshcaModule.Issuance> issue(Caller caller, RequestInfo request, Request r) {
    String nodeId = caller.nodeId();
    if (nodeId == null) return Future.failedFuture(Refusal.forbidden("only a node's agent credential asks for a hostname certificate"));
    return pool.preparedQuery("SELECT n.team, n.environment, host(n.address) AS address, n.current_key, "
            + "ARRAY(SELECT DISTINCT r.hostname FROM ingress_routes r WHERE r.team = n.team AND r.environment = n.environment "
            + "AND r.tls = 'meshca' AND r.ingress_tag = ANY(n.tags)) AS served, "
            + "l.issued_at AS latest_issued_at, l.hostnames AS latest_hostnames "
            + "FROM nodes n LEFT JOIN LATERAL (SELECT issued_at, hostnames FROM meshca_certificates c WHERE c.node_id = n.id "
            + "AND c.hostnames IS NOT NULL AND c.revoked_at IS NULL AND c.not_after > now() ORDER BY issued_at DESC LIMIT 1) l ON true "
            + "WHERE n.id = $1")
        .execute(Tuple.of(nodeId))
        .compose(rows -> {
          if (rows.size() == 0) return Future.failedFuture(Refusal.notFound("no node " + nodeId));
          Row row = rows.iterator().next();
          Set<String> served = Set.of(row.getArrayOfStrings("served"));
          for (int i = 0; i < r.hostnames().size(); i++) {
            String h = r.hostnames().get(i);
            if (!served.contains(h)) return Future.failedFuture(notServed(i, h, row.getString("team"), row.getString("environment")));
          }
          MeshcaModule.NodeIdentity who;
          try {
            who = new MeshcaModule.NodeIdentity(nodeId, row.getString("team"), row.getString("environment"), row.getString("address"),
                row.getString("current_key"));
          } catch (IllegalArgumentException e) {
            return Future.failedFuture(Refusal.conflict("this node's record cannot be certified (" + e.getMessage() + ")"));
          }
          return signer.issue(Actor.of(caller), request, who, r.csr(), true, notBefore(row, r.hostnames()), r.hostnames());
        })
        .recover(t -> Future.failedFuture(t instanceof Refusal f ? csrField(f) : t));
  }

  /** The CSR checks name the heartbeat's field ({@code pki.csr}); this request's field is {@code csr}. */
  static Refusal csrField(Refusal r) {
    if (r.errors().stream().noneMatch(e -> Csrs.FIELD.equals(e.field()))) return r;
    List<Refusal.FieldError> renamed = r.errors().stream()
        .map(e -> Csrs.FIELD.equals(e.field()) ? new Refusal.FieldError("csr", e.message()) : e).toList();
    return new Refusal(r.kind(), r.code(), r.getMessage().replace(Csrs.FIELD, "csr"), renamed, r.retryAfterSeconds());
  }

  /** When the node's next hostname certificate may be signed, or null: now. */
  private Instant notBefore(Row row, List<String> hostnames) {
    java.time.OffsetDateTime latest = row.getOffsetDateTime("latest_issued_at");
    if (latest == null) return null;
    String[] had = row.getArrayOfStrings("latest_hostnames");
    boolean same = had != null && new HashSet<>(List.of(had)).equals(new HashSet<>(hostnames));
    Duration hold = same ? min(REISSUE_AFTER, lifetime.dividedBy(2)) : min(CHANGE_AFTER, lifetime.dividedBy(2));
    return latest.toInstant().plus(hold);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  static Refusal notServed(int i, String hostname, String team, String environment) {
    String message = hostname + " is not the hostname of a tls: meshca route this node serves (a route of " + team + "/" + environment
        + " whose ingress_tag the node carries)";
    return new Refusal(Refusal.Kind.FORBIDDEN, "hostname_not_served", "hostnames[" + i + "]: " + message,
        List.of(new Refusal.FieldError("hostnames[" + i + "]", message)));
  }
}
