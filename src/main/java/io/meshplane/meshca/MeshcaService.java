package io.meshplane.meshca;

import io.meshplane.access.Caller;
import io.meshplane.audit.AuditLog;
import io.meshplane.audit.Target;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.time.Instant;
import java.util.List;

/**
 * MeshCA's API (docs/API.md, "MeshCA"): the bundle, the CRL, the certificates and their revocation.
 * Takes callers and parsed values; every read is inside the caller's boundary (what lies outside does
 * not exist: 404); each revocation is audited in its own transaction and appended to the change log.
 */
final class MeshcaService {
  /** A certificate's states, as the list filters them: revoked, else expired, else expiring (past half its lifetime), else valid. */
  static final List<String> STATES = List.of("valid", "expiring", "expired", "revoked");
  private final Pool pool;
  private final CertificateRepository certificates;
  private final Authorities authorities;
  private final Revocations revocations;
  private final AuditLog audit;
  private final ChangeLog.Feed changes;
  private final String trustDomain;

  MeshcaService(Pool pool, CertificateRepository certificates, Authorities authorities, Revocations revocations, AuditLog audit,
      ChangeLog.Feed changes, String trustDomain) {
    this.pool = pool;
    this.certificates = certificates;
    this.authorities = authorities;
    this.revocations = revocations;
    this.audit = audit;
    this.changes = changes;
    this.trustDomain = trustDomain;
  }

  /** The trust bundle: the PEM of the roots, and its version. */
  Authorities.Hierarchy hierarchy() {
    Authorities.Hierarchy h = authorities.current();
    if (h == null) throw Refusal.unavailable("meshca_starting", "MeshCA has not loaded its hierarchy yet", 5);
    return h;
  }

  Future<byte[]> crl() {
    hierarchy();
    return revocations.crl();
  }

  long revocationVersion() {
    return revocations.current().version();
  }

  Future<Buffer> list(Caller caller, CertificateRepository.Filter filter, Page page) {
    Instant now = Times.now();
    Instant afterNotAfter = page.afterPart(0) == null ? null : parseCursorTime(page.afterPart(0));
    String afterSerial = page.afterPart(1);
    return certificates.list(caller.boundary(), filter, now, afterNotAfter, afterSerial, page.fetch())
        .compose(rows -> page.render(rows, c -> json(c, now), c -> List.of(c.notAfter().toString(), c.serial())));
  }

  Future<JsonObject> get(Caller caller, String serial) {
    return certificates.get(caller.boundary(), serial).map(c -> {
      if (c == null) throw Refusal.notFound("no certificate " + serial);
      return json(c, Times.now()).put("certificate", Pki.pem("CERTIFICATE", c.certificate()));
    });
  }

  /**
   * Revokes a certificate of the caller's boundary: the row, the change-log entry that carries the
   * revocation to every replica, and the audit event in one transaction; answers once this replica's
   * revocation list holds it (so the CRL it serves next lists it).
   */
  Future<JsonObject> revoke(Caller caller, RequestInfo request, String serial, String reason) {
    Instant at = Times.now();
    return pool.withTransaction(tx -> certificates.lock(tx, caller.boundary(), serial).compose(c -> {
      if (c == null) return Future.failedFuture(Refusal.notFound("no certificate " + serial));
      if (c.revokedAt() != null) {
        return Future.failedFuture(Refusal.conflict("certificate " + serial + " was revoked at " + c.revokedAt() + " (" + c.reason() + ")"));
      }
      Revocations.Revoked r = new Revocations.Revoked(c.serial(), c.spkiSha256(), at, reason, c.notAfter(), 0);
      return ChangeLog.append(tx, Revocations.KIND, r.json().put("op", "revoke").put("node_id", c.nodeId()))
          .compose(seq -> certificates.markRevoked(tx, serial, at, reason, seq)
              .compose(v -> audit.success(tx, caller, request, "meshca.revoke", Target.of("certificate", serial, null), c.team(),
                  c.environment(), new JsonObject().put("node_id", c.nodeId()).put("reason", reason).put("seq", seq)))
              .map(v -> new Object[] {seq, c}));
    })).compose(done -> {
      changes.announce();
      long seq = (Long) done[0];
      CertificateRepository.Cert c = (CertificateRepository.Cert) done[1];
      return changes.applied(seq).map(v -> {
        CertificateRepository.Cert revoked = new CertificateRepository.Cert(c.serial(), c.nodeId(), c.team(), c.environment(),
            c.spkiSha256(), c.wireguardKey(), c.issuer(), c.notBefore(), c.notAfter(), c.issuedAt(), at, reason, null, c.hostnames());
        return json(revoked, Times.now()).put("revocation_version", seq);
      });
    });
  }

  private JsonObject json(CertificateRepository.Cert c, Instant now) {
    return new JsonObject()
        .put("serial", c.serial())
        .put("node_id", c.nodeId())
        .put("team", c.team())
        .put("environment", c.environment())
        .put("spiffe_id", c.hostnames() != null ? null : "spiffe://" + trustDomain + "/team/" + c.team() + "/env/" + c.environment() + "/node/" + c.nodeId())
        .put("hostnames", c.hostnames() == null ? null : new io.vertx.core.json.JsonArray(c.hostnames()))
        .put("state", c.state(now))
        .put("spki_sha256", c.spkiSha256())
        .put("wireguard_key", c.wireguardKey())
        .put("issuer", c.issuer())
        .put("not_before", Times.format(c.notBefore()))
        .put("not_after", Times.format(c.notAfter()))
        .put("issued_at", Times.format(c.issuedAt()))
        .put("revoked_at", c.revokedAt() == null ? null : Times.format(c.revokedAt()))
        .put("reason", c.reason());
  }

  private static Instant parseCursorTime(String s) {
    try {
      return Instant.parse(s);
    } catch (RuntimeException e) {
      throw Refusal.invalid("cursor", "is not a cursor this API returned for this list");
    }
  }
}
