package io.meshplane.meshca;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.audit.Actor;
import io.meshplane.audit.AuditLog;
import io.meshplane.changes.ChangeLog;
import io.meshplane.common.BoundedWork;
import io.meshplane.common.Fields;
import io.meshplane.common.Ids;
import io.meshplane.common.RequestInfo;
import io.meshplane.http.Api;
import io.meshplane.http.Cursors;
import io.meshplane.module.Module;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.sqlclient.Pool;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;

/**
 * MeshCA as a module (docs/ARCHITECTURE.md, "MeshCA"): the CA hierarchy ({@link Authorities}), node
 * certificates from CSRs ({@link NodeSigner}, under the cluster-wide {@link SigningBudget}), ingress nodes'
 * hostname certificates ({@link HostnameSigner}, through the same signer), revocation and
 * the CRL ({@link Revocations}, a follower of the change log), and the {@code /meshca} routes. The
 * heartbeat reaches it through the public methods below: {@link #nodePki}, {@link #nodeCertificates}, {@link #issue}, {@link #bundlePem},
 * {@link #bundleVersion}, {@link #revocationVersion}, {@link #renewalGrace}; what they take and give
 * are the nested {@link NodeIdentity} and {@link Issuance}.
 */
public final class MeshcaModule implements Module {
  /**
   * {@code meshca.*} (docs/OPERATIONS.md, settings).
   *
   * @param secret the configured secret (meshca.secret or the file meshca.secret_file), or null: then
   *     {@code generatedSecret} is read, or made there at the first start
   * @param crlUrl the CRL distribution point written into every node certificate
   */
  public record Settings(byte[] secret, Path generatedSecret, String trustDomain, Duration nodeLifetime, Duration renewalGrace,
      int maxSignaturesPerSecond, String crlUrl, Duration intermediateLifetime, Duration rootLifetime, boolean autoRotate) {
    /** Never prints the secret. */
    @Override
    public String toString() {
      return "meshca(trust domain " + trustDomain + ", node lifetime " + nodeLifetime + ", " + maxSignaturesPerSecond + " signatures/s)";
    }
  }

  /**
   * Who a node certificate is for, as the coordinator knows the node (never as the CSR names it): its id,
   * team and environment (the SPIFFE ID {@code spiffe://<trust domain>/team/<t>/env/<e>/node/<id>}), its
   * mesh address (the IP SAN) and its current WireGuard public key (recorded in the certificate, so a
   * re-key reissues).
   */
  public record NodeIdentity(String nodeId, String team, String environment, String meshAddress, String wireguardKey) {
    public NodeIdentity {
      if (!Ids.wellFormed(nodeId)) throw new IllegalArgumentException("node id: not an id");
      if (!Fields.isSlug(team) || !Fields.isSlug(environment)) throw new IllegalArgumentException("team, environment: not slugs");
      if (!ipv4(meshAddress)) throw new IllegalArgumentException("mesh address: not an IPv4 address");
      if (wireguardKey == null || wireguardKey.length() != 44 || decode(wireguardKey) == null) {
        throw new IllegalArgumentException("wireguard key: not base64 of 32 bytes");
      }
    }

    /** The URI SAN. */
    public String spiffeId(String trustDomain) {
      return "spiffe://" + trustDomain + "/team/" + team + "/env/" + environment + "/node/" + nodeId;
    }

    /** The WireGuard key's 32 bytes. */
    byte[] wireguardKeyBytes() {
      return decode(wireguardKey);
    }

    private static byte[] decode(String s) {
      try {
        byte[] b = Base64.getDecoder().decode(s);
        return b.length == 32 ? b : null;
      } catch (IllegalArgumentException e) {
        return null;
      }
    }

    private static boolean ipv4(String s) {
      if (s == null) return false;
      String[] parts = s.split("\\.", -1);
      if (parts.length != 4) return false;
      for (String p : parts) {
        if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9')) return false;
        if (Integer.parseInt(p) > 255 || (p.length() > 1 && p.charAt(0) == '0')) return false;
      }
      return true;
    }
  }

  /** What a CSR got: a certificate, or a deferral when the cluster-wide signing budget is spent (send the CSR again later). */
  public sealed interface Issuance permits Issuance.Issued, Issuance.Deferred {
    /**
     * A node certificate.
     *
     * @param serial 32 lower-case hex digits
     * @param certificatePem the node's certificate
     * @param chainPem what the node presents after its certificate: the intermediate (the root is in the bundle)
     * @param renewAfter when the node should send its next CSR: a random point between 30 % and 40 % of the lifetime
     * @param bundleVersion the version of the trust bundle the chain verifies under
     * @param issuer the id of the intermediate that signed it (the agent reports it back: a rotation counts it)
     */
    record Issued(String serial, String certificatePem, String chainPem, Instant notBefore, Instant notAfter, Instant renewAfter,
        String bundleVersion, String issuer) implements Issuance {}

    /** Over {@code meshca.max_signatures_per_s} (or the signing pool is full): try again in {@code retryAfterSeconds}. */
    record Deferred(int retryAfterSeconds) implements Issuance {}
  }

  /** The signing pool: CSR checks and signatures, one CSR per node at a time, never on an event loop. */
  static final BoundedWork.Limits SIGNING = new BoundedWork.Limits(2, 256, 1, 256, Duration.ofSeconds(10));

  private final Settings settings;
  private final Authorities authorities;
  private final Revocations revocations;
  private final BoundedWork work;
  private final NodeSigner signer;
  private final HeartbeatPki nodePki;
  private final HostnameSigner hostnames;
  private final MeshcaService service;
  private final Cursors cursors;
  private final MeshcaStatus status;
  private final MeshcaGauges gauges;
  private final Rotations rotations;
  private final AutoRotation autoRotation;
  private final OfflineIntermediates offline;
  private final Pool reads;

  /**
   * @param live the nodes' live state (the heartbeat feature's, built after this one: asked at call time): what a rotation
   *     counts before it advances
   */
  public MeshcaModule(Vertx vertx, HazelcastInstance hz, Pool pool, Pool reads, ChangeLog.Feed changes, AuditLog audit, Cursors cursors,
      MeterRegistry registry, Settings settings, java.util.function.Supplier<io.meshplane.node.LiveNodes> live, java.time.Duration gaugeInterval) {
    this.settings = settings;
    this.cursors = cursors;
    this.reads = reads;
    this.authorities = new Authorities(pool, settings.rootLifetime(), settings.intermediateLifetime());
    this.revocations = new Revocations(vertx, authorities);
    // the hierarchy first: a rotation's entry is installed before the followers after it (the watch stream) look
    changes.follow(authorities);
    changes.follow(revocations);
    this.rotations = new Rotations(vertx, pool, reads, authorities, audit, changes, live);
    this.offline = new OfflineIntermediates(vertx, pool, authorities, rotations, audit);
    this.autoRotation = new AutoRotation(vertx, pool, rotations, authorities, settings.autoRotate(), registry);
    CertificateRepository certificates = new CertificateRepository(pool, reads);
    this.work = new BoundedWork(vertx, "meshca-signing", SIGNING, registry);
    this.signer = new NodeSigner(pool, certificates, authorities, new SigningBudget(hz, settings.maxSignaturesPerSecond()), work, audit,
        settings.trustDomain(), settings.nodeLifetime(), settings.crlUrl(), registry);
    this.hostnames = new HostnameSigner(pool, signer, settings.nodeLifetime());
    this.nodePki = new HeartbeatPki(pool, signer, authorities::current, revocations, settings.renewalGrace(),
        new AutoRevocations(certificates, audit));
    this.service = new MeshcaService(pool, certificates, authorities, revocations, audit, changes, settings.trustDomain());
    this.status = new MeshcaStatus(reads, certificates);
    this.gauges = new MeshcaGauges(vertx, hz, registry, authorities, status, gaugeInterval);
  }

  @Override
  public String name() {
    return "meshca";
  }

  /** Opens the key vault with the secret and loads (at the first start: creates) the hierarchy. A wrong secret stops the start. */
  @Override
  public void load() {
    byte[] secret = settings.secret() != null ? settings.secret() : KeyVault.fileSecret(settings.generatedSecret());
    authorities.load(new KeyVault(secret));
  }

  @Override
  public void routes(Api api) {
    MeshcaRoutes.mount(api, service, cursors);
    MeshcaRoutes.mountStatus(api, status);
    HostnameRoutes.mount(api, hostnames);
    RotationRoutes.mount(api, rotations, autoRotation, offline);
  }

  /** Starts the rotation clock and the gauges (docs/OPERATIONS.md, "Metrics"). */
  @Override
  public Future<Void> start() {
    autoRotation.start();
    gauges.start();
    return Future.succeededFuture();
  }

  @Override
  public Future<Void> stop() {
    autoRotation.stop();
    gauges.stop();
    work.close();
    return Future.succeededFuture();
  }

  // ---- what the heartbeat (and the watch stream) call ----

  /**
   * Issues a node certificate for {@code csr} (a PKCS#10 CSR in PEM, or base64 of its DER), for
   * {@code node} as the coordinator knows it (every name in the CSR is ignored). Checked and signed on
   * the signing pool, recorded and audited ({@code meshca.issue}, by {@code actor}) in one transaction.
   * Completes with {@link Issuance.Issued}, or {@link Issuance.Deferred} when the cluster-wide budget
   * ({@code meshca.max_signatures_per_s}) is spent or the pool is full; fails with a 400
   * {@code Refusal} naming {@code pki.csr} for a CSR that does not parse, does not verify, or holds a
   * key other than ECDSA P-256 or Ed25519.
   */
  public Future<Issuance> issue(Actor actor, RequestInfo request, NodeIdentity node, String csr) {
    return signer.issue(actor, request, node, csr);
  }

  /** What the heartbeat (and the watch stream) ask of MeshCA: the answer's {@code pki} block, and certificates for CSRs. */
  public io.meshplane.node.NodePki nodePki() {
    return nodePki;
  }

  /** What the inventory's deletion and the write-behind's re-key call: the automatic revocations of a node's certificates. */
  public io.meshplane.node.NodeCertificates nodeCertificates() {
    return nodePki.certificates();
  }

  /** The trust bundle: the PEM of the roots nodes trust. */
  public String bundlePem() {
    return service.hierarchy().bundlePem();
  }

  /** Names the bundle's content (compare it with what a node reports to answer {@code unchanged}). */
  public String bundleVersion() {
    return service.hierarchy().bundleVersion();
  }

  /** The version of the revocation list (the seq of the last revocation's change-log entry; 0: none). */
  public long revocationVersion() {
    return revocations.current().version();
  }

  /**
   * One tick of the rotation clock as of {@code now} (every replica's timer calls it with the time; with
   * {@code meshca.auto_rotate} it starts an intermediate rotation from two thirds of the intermediate's
   * life, and advances an automatic rotation whose preview is ready). Failures are logged, never thrown.
   */
  public Future<Void> rotationTick(Instant now) {
    return autoRotation.tick(now);
  }

  /** The gauges' sampler (tests in this package). */
  MeshcaGauges gauges() {
    return gauges;
  }

  /** How long after its expiry a node may still renew with its agent token alone ({@code meshca.renewal_grace}). */
  public Duration renewalGrace() {
    return settings.renewalGrace();
  }
}
