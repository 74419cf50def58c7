package io.meshplane.meshca;

import io.meshplane.access.Caller;
import io.meshplane.audit.Actor;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.node.NodeCertificates;
import io.meshplane.node.NodePki;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The heartbeat's side of MeshCA ({@link NodePki}): the answer's {@code pki} block from this replica's
 * memory (the bundle and the revocation list, each encoded once per version and reused for every answer
 * that needs it), and the certificate for a CSR through {@link NodeSigner} after one point read of the
 * node's identity (team, environment, mesh address, current WireGuard key) by its primary key, with the
 * expiry of its last certificate: one that expired longer ago than {@code meshca.renewal_grace} is not
 * renewed with the agent token alone (the answer says {@code refused}: re-enroll), one within it is,
 * with no restart of the agent.
 */
final class HeartbeatPki implements NodePki {
  private record Encoded(Object version, Buffer json) {}

  /** Deltas are cached per list: its version and size (an expired entry left out changes the size, never the version). */
  private record ListKey(long version, int size) {}

  /** The deltas of one list, by the version they start from: the last {@link #DELTAS} asked for. */
  private record Deltas(ListKey list, Map<Long, Buffer> from) {}

  /** How many from-versions' deltas are kept encoded for the current list. */
  static final int DELTAS = 64;

  /** A node whose latest certificate (not revoked, for the same key) is younger than this gets {@code deferred} for a CSR. */
  static final java.time.Duration REISSUE_AFTER = java.time.Duration.ofSeconds(60);

  private final Pool pool;
  private final NodeSigner signer;
  private final Supplier<Authorities.Hierarchy> hierarchy;
  private final Revocations revocations;
  /** A node whose last certificate expired longer ago than this gets none for a CSR ({@code meshca.renewal_grace}). */
  private final java.time.Duration grace;
  private volatile Encoded bundle;
  private volatile Encoded revoked;
  private volatile Deltas deltas;
  private final NodeCertificates certificates;

  HeartbeatPki(Pool pool, NodeSigner signer, Supplier<Authorities.Hierarchy> hierarchy, Revocations revocations, java.time.Duration grace,
      NodeCertificates certificates) {
    this.pool = pool;
    this.certificates = certificates;
    this.grace = grace;
    this.signer = signer;
    this.hierarchy = hierarchy;
    this.revocations = revocations;
  }

  @Override
  public Future<Buffer> issue(Caller caller, RequestInfo request, String nodeId, String reportedKey, Report report, boolean requested) {
    return pool.preparedQuery("SELECT team, environment, host(address) AS address, current_key, "
            + "(SELECT max(not_after) FROM meshca_certificates c WHERE c.node_id = n.id AND c.hostnames IS NULL) AS last_not_after, "
            + "l.issued_at AS latest_issued_at, l.revoked_at AS latest_revoked_at, l.wireguard_key AS latest_key, l.issuer AS latest_issuer, l.not_after > now() AS latest_standing "
            + "FROM nodes n LEFT JOIN LATERAL (SELECT issued_at, revoked_at, wireguard_key, issuer, not_after FROM meshca_certificates c "
            + "WHERE c.node_id = n.id AND c.hostnames IS NULL ORDER BY issued_at DESC LIMIT 1) l ON true WHERE n.id = $1")
        .execute(Tuple.of(nodeId))
        .compose(rows -> {
          if (rows.size() == 0) return Future.failedFuture(Refusal.notFound("no node " + nodeId));
          Row r = rows.iterator().next();
          java.time.OffsetDateTime last = r.getOffsetDateTime("last_not_after");
          if (last != null && last.toInstant().plus(grace).isBefore(java.time.Instant.now())) {
            // the node's last certificate expired longer ago than meshca.renewal_grace: not renewed with the agent token alone
            return Future.succeededFuture(Buffer.buffer("\"refused\":{\"code\":\"renewal_grace_passed\",\"detail\":\"the node's last certificate expired at "
                + last.toInstant() + ", more than meshca.renewal_grace (" + grace + ") ago: re-enroll the node\"}"));
          }
          String key = reportedKey != null ? reportedKey : r.getString("current_key");
          java.time.OffsetDateTime latest = r.getOffsetDateTime("latest_issued_at");
          // one node gets at most one certificate per REISSUE_AFTER for the same key while its latest one stands: a node
          // sending a CSR with every heartbeat cannot spend the cluster's signing budget that every other node shares
          // (a certificate from an authority that no longer signs, a CA rotation's renewal, is not held back)
          Authorities.Hierarchy h = hierarchy.get();
          boolean fromSigning = h != null && h.intermediate().id().equals(r.getString("latest_issuer"));
          java.time.Instant notBefore = latest != null && r.getValue("latest_revoked_at") == null && Boolean.TRUE.equals(r.getBoolean("latest_standing"))
              && fromSigning && !requested && key != null && key.equals(r.getString("latest_key")) ? latest.toInstant().plus(REISSUE_AFTER) : null;
          MeshcaModule.NodeIdentity who;
          try {
            who = new MeshcaModule.NodeIdentity(nodeId, r.getString("team"), r.getString("environment"), r.getString("address"),
                reportedKey != null ? reportedKey : r.getString("current_key"));
          } catch (IllegalArgumentException e) {
            return Future.failedFuture(Refusal.conflict("this node's record cannot be certified (" + e.getMessage() + ")"));
          }
          return signer.issue(Actor.of(caller), request, who, report.csr(), true, notBefore).map(i -> encode(i, who.wireguardKey()));
        });
  }

  private static Buffer encode(MeshcaModule.Issuance i, String wireguardKey) {
    if (i instanceof MeshcaModule.Issuance.Deferred d) {
      return Buffer.buffer("\"deferred\":{\"retry_after_s\":" + d.retryAfterSeconds() + "}");
    }
    MeshcaModule.Issuance.Issued c = (MeshcaModule.Issuance.Issued) i;
    return Buffer.buffer("\"certificate\":" + new JsonObject().put("serial", c.serial()).put("pem", c.certificatePem()).put("chain", c.chainPem())
        .put("not_before", c.notBefore().toString()).put("not_after", c.notAfter().toString()).put("renew_after", c.renewAfter().toString())
        .put("bundle", c.bundleVersion()).put("issuer", c.issuer()).put("wireguard_key", wireguardKey).encode());
  }

  @Override
  public void answer(String nodeId, Report report, Buffer issued, Buffer out) {
    if (report == null) return;
    out.appendString(",\"pki\":{\"bundle\":");
    Authorities.Hierarchy h = hierarchy.get();
    out.appendBuffer(bundle(h, report.bundle()));
    out.appendString(",\"revocations\":");
    out.appendBuffer(revocations(revocations.current(), report.revocations()));
    if (issued != null) {
      out.appendString(",").appendBuffer(issued);
    } else if (h != null && report.serial() != null && report.issuer() != null && !report.issuer().equals(h.intermediate().id())) {
      // a certificate from an authority that no longer signs (a rotation issuing, or rolled back): renew now, under the budget
      out.appendString(",\"renew\":{\"reason\":\"issuer_rotated\",\"issuer\":\"").appendString(h.intermediate().id()).appendString("\"}");
    }
    out.appendString("}");
  }

  /** The bundle part for a node that holds {@code held}: {@code unchanged}, or the bundle (encoded once per version). */
  private Buffer bundle(Authorities.Hierarchy h, String held) {
    if (h == null) return Buffer.buffer("{\"version\":\"\",\"unchanged\":true}");
    if (h.bundleVersion().equals(held)) return Buffer.buffer("{\"version\":\"" + h.bundleVersion() + "\",\"unchanged\":true}");
    Encoded b = bundle;
    if (b == null || !b.version().equals(h.bundleVersion())) {
      b = new Encoded(h.bundleVersion(), Buffer.buffer(new JsonObject().put("version", h.bundleVersion()).put("pem", h.bundlePem()).encode()));
      bundle = b;
    }
    return b.json();
  }

  @Override
  public boolean current(String bundle, long revocationVersion) {
    Authorities.Hierarchy h = hierarchy.get();
    return (h == null || h.bundleVersion().equals(bundle)) && revocations.version() == revocationVersion;
  }

  @Override
  public Object[] streamParts(String held, long revocationVersion, List<Buffer> parts) {
    Authorities.Hierarchy h = hierarchy.get();
    Revocations.State s = revocations.current();
    boolean bundleCurrent = h == null || h.bundleVersion().equals(held);
    if (bundleCurrent && s.version() == revocationVersion) return null;
    parts.add(Buffer.buffer(",\"pki\":{\"bundle\":"));
    parts.add(bundle(h, held));
    parts.add(Buffer.buffer(",\"revocations\":"));
    parts.add(revocations(s, revocationVersion));
    parts.add(Buffer.buffer("}"));
    return new Object[] {h == null ? held : h.bundleVersion(), s.version()};
  }

  @Override
  public JsonObject sync(String bundle, String issuer, String serial) {
    Authorities.Hierarchy h = hierarchy.get();
    if (h == null) return null;
    String current = h.intermediate().id();
    boolean none = bundle.isEmpty() && issuer.isEmpty();
    boolean bundleCurrent = h.bundleVersion().equals(bundle);
    boolean issuerCurrent = current.equals(issuer);
    return new JsonObject().put("state", none ? "none" : bundleCurrent && issuerCurrent ? "current" : "behind")
        .put("bundle", bundle.isEmpty() ? null : bundle).put("current_bundle", h.bundleVersion())
        .put("issuer", issuer.isEmpty() ? null : issuer).put("current_issuer", current).put("serial", serial.isEmpty() ? null : serial);
  }

  /**
   * The revocations part for a node that holds version {@code held} of the list: {@code unchanged} when
   * current; {@code added} (the entries after {@code held}) when this replica has applied every
   * revocation since {@code held} itself ({@link Revocations.State#holdsAllSince}); the whole list
   * ({@code items}) otherwise (none held, one older than this replica's load, one from elsewhere).
   * The whole list is encoded once per list, each delta once per list and from-version (the last
   * {@link #DELTAS} of them), and the same bytes go into every answer that needs them.
   */
  Buffer revocations(Revocations.State s, long held) {
    if (s.version() == held) return Buffer.buffer("{\"version\":" + s.version() + ",\"unchanged\":true}");
    ListKey key = new ListKey(s.version(), s.revoked().size());
    if (!s.holdsAllSince(held)) {
      Encoded e = revoked;
      if (e == null || !e.version().equals(key)) {
        e = new Encoded(key, Buffer.buffer(new JsonObject().put("version", s.version()).put("items", items(s, Long.MIN_VALUE)).encode()));
        revoked = e;
      }
      return e.json();
    }
    Deltas d = deltas;
    if (d == null || !d.list().equals(key)) {
      d = new Deltas(key, java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<Long, Buffer>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Buffer> eldest) {
          return size() > DELTAS;
        }
      }));
      deltas = d;
    }
    Buffer b = d.from().get(held);
    if (b == null) {
      b = Buffer.buffer(new JsonObject().put("version", s.version()).put("added", items(s, held)).encode());
      d.from().put(held, b);
    }
    return b;
  }

  /** The entries of {@code s} after {@code after} (a change-log seq), as the agent reads them. */
  private static JsonArray items(Revocations.State s, long after) {
    JsonArray items = new JsonArray();
    for (Revocations.Revoked r : s.revoked()) {
      if (r.seq() <= after) continue;
      items.add(new JsonObject().put("serial", r.serial()).put("spki_sha256", r.spkiSha256()).put("not_after", r.notAfter().toString()));
    }
    return items;
  }

  @Override
  public NodeCertificates certificates() {
    return certificates;
  }
}
