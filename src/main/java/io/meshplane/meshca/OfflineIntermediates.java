package io.meshplane.meshca;

import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.Ids;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.meshplane.common.Sql;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.io.ByteArrayInputStream;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.Collection;
import java.util.Optional;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;

/**
 * The replica's side of a root kept outside the coordinator (docs/OPERATIONS.md, "MeshCA with an offline
 * root"): a replica makes an intermediate's key (sealed at once, like every CA key) and answers its CSR
 * ({@code POST /meshca/intermediates/requests}); the operator signs it offline ({@code meshplane ca
 * sign}) and uploads the certificate ({@code POST /meshca/intermediates}), which stages a rotation:
 * of the intermediate when it is signed by the root nodes trust, or of the root when the upload brings
 * a new root (the current root, held by the coordinator, cross-signs it: how a deployment started with
 * the embedded root moves to an offline one). The root's private key never reaches a replica.
 */
final class OfflineIntermediates {
  /** Requests kept at once: each is a sealed key waiting for its certificate. */
  static final int MAX_REQUESTS = 5;
  /** The longest PEM an upload may carry (a certificate is about 1 KB). */
  static final int MAX_PEM = 16 * 1024;

  private final Vertx vertx;
  private final Pool pool;
  private final Authorities authorities;
  private final Rotations rotations;
  private final AuditLog audit;

  OfflineIntermediates(Vertx vertx, Pool pool, Authorities authorities, Rotations rotations, AuditLog audit) {
    this.vertx = vertx;
    this.pool = pool;
    this.authorities = authorities;
    this.rotations = rotations;
    this.audit = audit;
  }

  private record Made(String id, byte[] sealed, byte[] csrDer, String spki) {}

  /** A new intermediate key (sealed) and its CSR: {@code {id, csr, spki_sha256, created_at}}. 409 beyond {@link #MAX_REQUESTS}. */
  Future<JsonObject> request(Actor actor, RequestInfo request) {
    return vertx.<Made>executeBlocking(() -> {
      String id = Ids.next("ca");
      KeyPair k = Pki.p256();
      byte[] csr = new JcaPKCS10CertificationRequestBuilder(new X500Principal("O=Meshplane, CN=MeshCA intermediate " + id), k.getPublic())
          .build(Pki.signer(k.getPrivate())).getEncoded();
      return new Made(id, authorities.vault().seal(id, k.getPrivate().getEncoded()), csr, Pki.sha256Hex(k.getPublic().getEncoded()));
    }, false).compose(m -> {
      Instant now = Times.now();
      return pool.withTransaction(tx -> tx.query("SELECT count(*) AS n FROM meshca_intermediate_requests").execute().compose(rows -> {
        if (rows.iterator().next().getLong("n") >= MAX_REQUESTS) {
          return Future.failedFuture(Refusal.conflict(MAX_REQUESTS + " intermediate requests wait for their certificates already: upload one"));
        }
        return tx.preparedQuery("INSERT INTO meshca_intermediate_requests (id, sealed_key, csr, spki_sha256, created_at) VALUES ($1, $2, $3, $4, $5)")
            .execute(Tuple.of(m.id(), Buffer.buffer(m.sealed()), Buffer.buffer(m.csrDer()), m.spki(), Sql.odt(now)))
            .compose(v -> audit.record(tx, AuditEvent.of(actor, request, "meshca.intermediate.request", "authority", m.id(), AuditEvent.SUCCESS,
                "*", "*").with(new JsonObject().put("spki_sha256", m.spki()))));
      })).map(v -> new JsonObject().put("id", m.id()).put("csr", Pki.pem("CERTIFICATE REQUEST", m.csrDer())).put("spki_sha256", m.spki())
          .put("created_at", Times.format(now)));
    });
  }

  /**
   * Stages the uploaded intermediate ({@code certificatePem}) as a rotation. With {@code rootPem} (a new
   * root, self-signed, not in the bundle), a root rotation whose new root the current root cross-signs;
   * without, an intermediate rotation under the root that signs today. 400 naming {@code certificate}
   * or {@code root} for what does not check out.
   */
  Future<Rotations.Rotation> upload(Actor actor, RequestInfo request, String certificatePem, String rootPem) {
    X509Certificate cert = one(certificatePem, "certificate");
    X509Certificate newRoot = rootPem == null ? null : one(rootPem, "root");
    String spki = Pki.sha256Hex(cert.getPublicKey().getEncoded());
    Authorities.Hierarchy h = authorities.current();
    Authorities.Authority oldIntermediate = h.intermediate();
    Authorities.Authority oldRoot = h.byId(oldIntermediate.parent());
    return pool.preparedQuery("SELECT r.id, r.sealed_key, r.csr, (SELECT sealed_key FROM meshca_authorities WHERE id = $2) AS root_key "
            + "FROM meshca_intermediate_requests r WHERE r.spki_sha256 = $1")
        .execute(Tuple.of(spki, oldRoot.id())).compose(rows -> {
          if (rows.size() == 0) {
            throw Refusal.invalid("certificate", "certifies a key this coordinator did not make: request one with POST /v1/meshca/intermediates/requests "
                + "and sign that request's CSR");
          }
          Row r = rows.iterator().next();
          Buffer rootKey = r.getBuffer("root_key");
          return vertx.<Rotations.Made>executeBlocking(() -> made(r, cert, newRoot, oldRoot, rootKey == null ? null : rootKey.getBytes()), false)
              .compose(made -> rotations.stage(actor, request, newRoot == null ? "intermediate" : "root", made, false, oldRoot.id(), oldIntermediate.id(),
                  tx -> tx.preparedQuery("DELETE FROM meshca_intermediate_requests WHERE id = $1").execute(Tuple.of(made.intermediateId())).mapEmpty()));
        });
  }

  private Rotations.Made made(Row request, X509Certificate cert, X509Certificate newRoot, Authorities.Authority oldRoot, byte[] oldRootSealed)
      throws Exception {
    String id = request.getString("id");
    byte[] sealed = request.getBuffer("sealed_key").getBytes();
    PublicKey staged = new org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequest(request.getBuffer("csr").getBytes()).getPublicKey();
    X509Certificate issuer = newRoot != null ? newRoot : x509(oldRoot.certificate());
    if (newRoot != null) {
      Optional<String> bad = rootProblem(newRoot);
      if (bad.isPresent()) throw Refusal.invalid("root", bad.get());
    }
    Optional<String> bad = IntermediateCheck.check(cert, issuer, staged);
    if (bad.isPresent()) throw Refusal.invalid("certificate", bad.get());
    X509CertificateHolder inter = new X509CertificateHolder(cert.getEncoded());
    if (newRoot == null) return new Rotations.Made(null, null, null, null, id, inter, sealed);
    if (oldRootSealed == null) {
      throw Refusal.conflict("the current root " + oldRoot.id() + " is kept outside the coordinator too: the coordinator cannot cross-sign a new root");
    }
    PrivateKey oldRootKey = authorities.key(new Authorities.Stored(oldRoot.id(), "root", null, oldRoot.state(), null, null, oldRootSealed));
    X509CertificateHolder root = new X509CertificateHolder(newRoot.getEncoded());
    return new Rotations.Made(Ids.next("ca"), root, null, Pki.crossSigned(root, oldRoot.certificate(), oldRootKey, Instant.now()), id, inter, sealed);
  }

  /** What is wrong with a new root: not self-signed, not a CA, or a root the bundle holds already. */
  private Optional<String> rootProblem(X509Certificate root) throws Exception {
    if (!root.getSubjectX500Principal().equals(root.getIssuerX500Principal())) return Optional.of("is not self-signed (issued by "
        + root.getIssuerX500Principal().getName() + ")");
    try {
      root.verify(root.getPublicKey());
    } catch (Exception e) {
      return Optional.of("is not self-signed: its signature does not verify with its own key");
    }
    if (root.getBasicConstraints() < 0) return Optional.of("is not a CA certificate");
    for (Authorities.Authority a : authorities.current().roots()) {
      if (x509(a.certificate()).getSubjectX500Principal().equals(root.getSubjectX500Principal())) {
        return Optional.of("is a root the bundle holds already");
      }
    }
    return Optional.empty();
  }

  private static X509Certificate x509(X509CertificateHolder h) throws Exception {
    return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(new ByteArrayInputStream(h.getEncoded()));
  }

  /** Exactly one PEM certificate in {@code pem}, else 400 naming {@code field}. */
  static X509Certificate one(String pem, String field) {
    if (pem == null || pem.length() > MAX_PEM || !pem.contains("-----BEGIN CERTIFICATE-----")) {
      throw Refusal.invalid(field, "must be one PEM certificate (-----BEGIN CERTIFICATE-----), at most " + MAX_PEM + " characters");
    }
    try {
      Collection<? extends java.security.cert.Certificate> all = CertificateFactory.getInstance("X.509")
          .generateCertificates(new ByteArrayInputStream(pem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
      if (all.size() != 1) throw Refusal.invalid(field, "must hold exactly one certificate, not " + all.size());
      return (X509Certificate) all.iterator().next();
    } catch (CertificateException e) {
      throw Refusal.invalid(field, "is not a readable X.509 certificate");
    }
  }
}
