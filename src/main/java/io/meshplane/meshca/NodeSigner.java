package io.meshplane.meshca;

import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditEvent;
import io.meshplane.audit.AuditLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.common.Refusal;
import io.meshplane.common.RequestInfo;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.io.IOException;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.ThreadLocalRandom;
import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.bouncycastle.asn1.DEROctetString;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.CRLDistPoint;
import org.bouncycastle.asn1.x509.DistributionPoint;
import org.bouncycastle.asn1.x509.DistributionPointName;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectPublicKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;

/**
 * CSR → node certificate. A CSR is checked ({@link Csrs}), counted against the cluster-wide
 * {@link SigningBudget}, signed by the active intermediate, and recorded with its audit event in one
 * transaction. Parsing, checking and signing run on the bounded signing pool ({@link BoundedWork}: one
 * CSR per node at a time), never on an event loop; a CSR over the budget, or one the full pool cannot
 * take, is {@link MeshcaModule.Issuance.Deferred deferred} with the seconds to wait.
 *
 * <p>The certificate: serial 128 random bits; subject {@code CN=<node id>}; URI SAN
 * {@code spiffe://<trust domain>/team/<t>/env/<e>/node/<id>} and IP SAN the mesh address; the node's
 * WireGuard key in the non-critical extension {@link #WIREGUARD_KEY_OID}; notBefore 5 minutes back,
 * notAfter {@code meshca.node_lifetime} ahead; digitalSignature; client and server auth; AKI and SKI; a
 * CRL distribution point ({@code meshca.crl_url}); ECDSA-SHA256 by the intermediate.
 */
final class NodeSigner {
  /**
   * The extension that records the node's WireGuard public key (an OCTET STRING of its 32 bytes). An
   * OID under {@code 2.25} (ITU-T X.667: an OID made of a UUID, 43dd455c-12f4-47f0-9371-6b92621cc074,
   * needs no registration), so it can never collide with an assigned one.
   */
  static final ASN1ObjectIdentifier WIREGUARD_KEY_OID = new ASN1ObjectIdentifier("2.25.90207180104445211470672057157098979444");

  /** Where {@code renew_after} falls: a random point of [RENEW_FROM, RENEW_FROM + RENEW_SPREAD) of the lifetime. */
  static final double RENEW_FROM = 0.30;
  static final double RENEW_SPREAD = 0.10;

  /** What the signing pool hands back: a certificate to record, or the seconds to wait. */
  private record Signed(CertificateRepository.Cert row, String pem, Instant renewAfter, int retryAfter) {}

  private final Pool pool;
  private final CertificateRepository certificates;
  private final Authorities authorities;
  private final SigningBudget budget;
  private final BoundedWork work;
  private final AuditLog audit;
  private final String trustDomain;
  private final Duration lifetime;
  private final String crlUrl;
  private final io.micrometer.core.instrument.Counter issued;
  private final io.micrometer.core.instrument.Counter deferred;

  NodeSigner(Pool pool, CertificateRepository certificates, Authorities authorities, SigningBudget budget, BoundedWork work, AuditLog audit,
      String trustDomain, Duration lifetime, String crlUrl, io.micrometer.core.instrument.MeterRegistry registry) {
    this.issued = io.micrometer.core.instrument.Counter.builder("mesh.meshca.certificates.issued")
        .description("Node certificates this replica signed and recorded").register(registry);
    this.deferred = io.micrometer.core.instrument.Counter.builder("mesh.meshca.signatures.deferred")
        .description("CSRs deferred by this replica: over the cluster-wide signing budget, or the signing pool full").register(registry);
    this.pool = pool;
    this.certificates = certificates;
    this.authorities = authorities;
    this.budget = budget;
    this.work = work;
    this.audit = audit;
    this.trustDomain = trustDomain;
    this.lifetime = lifetime;
    this.crlUrl = crlUrl;
  }

  /** See {@link MeshcaModule#issue}. */
  Future<MeshcaModule.Issuance> issue(Actor actor, RequestInfo request, MeshcaModule.NodeIdentity node, String csr) {
    return issue(actor, request, node, csr, false);
  }

  /**
   * As {@link #issue(Actor, RequestInfo, MeshcaModule.NodeIdentity, String)}; {@code enrolled}: the
   * identity is an enrolled node's (the heartbeat's CSR), and the row is inserted only while the node's
   * row exists, under its key-share lock: a deletion that began first makes this wait for its commit and
   * then refuses (404), one that begins later waits for this insert and then revokes what it inserted.
   */
  Future<MeshcaModule.Issuance> issue(Actor actor, RequestInfo request, MeshcaModule.NodeIdentity node, String csr, boolean enrolled) {
    return issue(actor, request, node, csr, enrolled, null);
  }

  /**
   * As above; {@code notBefore}: no certificate is signed for this node before then (its latest one is
   * too young): a CSR that checks out is {@link MeshcaModule.Issuance.Deferred deferred} until then,
   * without taking from the budget; one that does not is refused as always.
   */
  Future<MeshcaModule.Issuance> issue(Actor actor, RequestInfo request, MeshcaModule.NodeIdentity node, String csr, boolean enrolled,
      Instant notBefore) {
    return issue(actor, request, node, csr, enrolled, notBefore, null);
  }

  /**
   * As above; {@code hostnames} not null: a hostname certificate ({@link HostnameSigner}) for those DNS
   * names instead of the node certificate: the same check of the CSR, budget, pool, lifetime, issuer,
   * record and revocation, its SAN the DNS names (no SPIFFE ID, no mesh address, no WireGuard key),
   * server auth only, {@code renew_after} at two thirds of its lifetime, audited as {@code meshca.issue_hostnames}.
   */
  Future<MeshcaModule.Issuance> issue(Actor actor, RequestInfo request, MeshcaModule.NodeIdentity node, String csr, boolean enrolled,
      Instant notBefore, java.util.List<String> hostnames) {
    Authorities.Hierarchy h = authorities.current();
    if (h == null) return Future.failedFuture(Refusal.unavailable("meshca_starting", "MeshCA has not loaded its hierarchy yet", 5));
    return work.<Signed>submit(node.nodeId(), node.team() + "/" + node.environment(), "certificate signature", deadline -> {
      boolean held = notBefore != null && Instant.now().isBefore(notBefore);
      // over the budget: deferred before the check (a mass issuance's deferrals cost no CSR check each; a bad CSR is
      // refused once the budget could sign it). A node held back is checked first: it is refused as always.
      int early = held ? 0 : budget.waitSeconds();
      if (early > 0) return new Signed(null, null, null, early);
      SubjectPublicKeyInfo spki = Csrs.check(csr);
      if (held) return new Signed(null, null, null, (int) Math.max(1, Duration.between(Instant.now(), notBefore).toSeconds() + 1));
      int wait = budget.take();
      if (wait > 0) return new Signed(null, null, null, wait);
      deadline.check();
      return sign(h, node, spki, Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS), hostnames);
    }).recover(t -> {
      // the pool is full (this replica) or this node already has a CSR in flight: the same answer as the budget's
      if (t instanceof Refusal r && (r.kind() == Refusal.Kind.RATE_LIMITED || "busy".equals(r.code()))) {
        return Future.succeededFuture(new Signed(null, null, null, Math.max(1, r.retryAfterSeconds())));
      }
      return Future.failedFuture(t);
    }).compose(s -> {
      if (s.row() == null) {
        deferred.increment();
        return Future.succeededFuture(new MeshcaModule.Issuance.Deferred(s.retryAfter()));
      }
      CertificateRepository.Cert c = s.row();
      JsonObject details = new JsonObject().put("serial", c.serial())
          .put("not_after", c.notAfter().toString()).put("issuer", c.issuer()).put("wireguard_key", c.wireguardKey());
      if (hostnames == null) details.put("spiffe_id", node.spiffeId(trustDomain));
      else details.put("hostnames", new io.vertx.core.json.JsonArray(hostnames));
      AuditEvent e = AuditEvent.of(actor, request, hostnames == null ? "meshca.issue" : "meshca.issue_hostnames", "node", node.nodeId(),
          AuditEvent.SUCCESS, node.team(), node.environment()).with(details);
      return pool.withTransaction(tx -> (enrolled ? CertificateRepository.holdNode(tx, node.nodeId()) : Future.succeededFuture(true))
              .compose(held -> held ? certificates.insert(tx, c).compose(v -> audit.record(tx, e))
                  : Future.failedFuture(Refusal.notFound("no node " + node.nodeId()))))
          .map(v -> {
            issued.increment();
            return (MeshcaModule.Issuance) new MeshcaModule.Issuance.Issued(c.serial(), s.pem(), h.chainPem(), c.notBefore(), c.notAfter(), s.renewAfter(), h.bundleVersion(),
                c.issuer());
          });
    });
  }

  /** Builds and signs the certificate (the signing pool's thread). */
  private Signed sign(Authorities.Hierarchy h, MeshcaModule.NodeIdentity node, SubjectPublicKeyInfo spki, Instant now, java.util.List<String> hostnames) {
    if (Context.isOnEventLoopThread()) throw new IllegalStateException("NodeSigner.sign on an event loop");
    X509CertificateHolder issuer = h.intermediate().certificate();
    BigInteger serial = Pki.serial();
    Instant notBefore = now.minus(Pki.SKEW);
    Instant notAfter = now.plus(lifetime);
    if (notAfter.isAfter(issuer.getNotAfter().toInstant())) notAfter = issuer.getNotAfter().toInstant();
    X509v3CertificateBuilder b = new X509v3CertificateBuilder(issuer.getSubject(), serial, Date.from(notBefore), Date.from(notAfter),
        new X500Name("CN=" + (hostnames == null ? node.nodeId() : hostnames.get(0))), spki);
    byte[] der;
    try {
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.subjectAlternativeName, false, hostnames != null ? dnsNames(hostnames) : new GeneralNames(new GeneralName[] {
          new GeneralName(GeneralName.uniformResourceIdentifier, node.spiffeId(trustDomain)),
          new GeneralName(GeneralName.iPAddress, node.meshAddress())}));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      // a hostname certificate serves TLS only: it cannot stand in for the node as a mesh TLS client
      b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(hostnames != null ? new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth}
          : new KeyPurposeId[] {KeyPurposeId.id_kp_clientAuth, KeyPurposeId.id_kp_serverAuth}));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(spki));
      b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(issuer.getSubjectPublicKeyInfo()));
      b.addExtension(Extension.cRLDistributionPoints, false, new CRLDistPoint(new DistributionPoint[] {new DistributionPoint(
          new DistributionPointName(new GeneralNames(new GeneralName(GeneralName.uniformResourceIdentifier, crlUrl))), null, null)}));
      if (hostnames == null) b.addExtension(WIREGUARD_KEY_OID, false, new DEROctetString(node.wireguardKeyBytes()));
      der = b.build(Pki.signer(h.intermediate().key())).getEncoded();
      byte[] spkiDer = spki.getEncoded();
      // renewal at a random point of 30-40 % of the lifetime: renewals spread, and an outage of half the lifetime expires
      // nothing: the node due last still has 10 % of the lifetime to reach a returned coordinator (AgentPki.retryCapMs)
      long life = Duration.between(now, notAfter).toMillis();
      // a hostname certificate: at two thirds of its lifetime, as the ACME certificates of the same edge
      Instant renewAfter = hostnames != null ? now.plusMillis(life * 2 / 3)
          : now.plusMillis((long) (life * (RENEW_FROM + RENEW_SPREAD * ThreadLocalRandom.current().nextDouble())));
      CertificateRepository.Cert row = new CertificateRepository.Cert(Pki.hex(serial), node.nodeId(), node.team(), node.environment(),
          Pki.sha256Hex(spkiDer), node.wireguardKey(), h.intermediate().id(), notBefore, notAfter, now, null, null, der,
          hostnames == null ? null : java.util.List.copyOf(hostnames));
      return new Signed(row, Pki.pem("CERTIFICATE", der), renewAfter, 0);
    } catch (IOException | java.security.GeneralSecurityException e) {
      throw new IllegalStateException("building a node certificate failed: " + e.getMessage());
    }
  }

  private static GeneralNames dnsNames(java.util.List<String> hostnames) {
    GeneralName[] names = new GeneralName[hostnames.size()];
    for (int i = 0; i < names.length; i++) names[i] = new GeneralName(GeneralName.dNSName, hostnames.get(i));
    return new GeneralNames(names);
  }
}
