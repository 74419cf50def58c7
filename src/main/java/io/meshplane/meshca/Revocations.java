package io.meshplane.meshca;

import io.meshplane.changes.ChangeLog;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.io.IOException;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Date;
import java.util.List;
import java.util.Map;
import org.bouncycastle.asn1.x509.CRLNumber;
import org.bouncycastle.asn1.x509.CRLReason;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v2CRLBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;

/**
 * The revocation list every replica holds in memory: the revoked certificates that have not expired
 * (one leaves the list when it expires), by serial and by public key (the SHA-256 of its
 * SubjectPublicKeyInfo), never by fingerprint. A follower of the change log: each revocation is a
 * {@code pki} entry, so every replica applies it in the same order, and the list's version (the seq of
 * the last one) names one content on every replica. The CRL is signed from it at most once per version
 * (and again every hour, so that its nextUpdate never lapses).
 */
final class Revocations implements ChangeLog.Follower {
  static final String KIND = "pki";
  /** A CRL's nextUpdate is this far after its thisUpdate; a cached CRL is signed again after {@link #RESIGN}. */
  static final Duration NEXT_UPDATE = Duration.ofHours(24);
  static final Duration RESIGN = Duration.ofHours(1);
  /** RFC 5280's CRLReason names this API takes (certificateHold and removeFromCRL are not: a revocation is final). */
  static final Map<String, Integer> REASONS = Map.of("unspecified", CRLReason.unspecified, "keyCompromise", CRLReason.keyCompromise,
      "cACompromise", CRLReason.cACompromise, "affiliationChanged", CRLReason.affiliationChanged, "superseded", CRLReason.superseded,
      "cessationOfOperation", CRLReason.cessationOfOperation, "privilegeWithdrawn", CRLReason.privilegeWithdrawn,
      "aACompromise", CRLReason.aACompromise);

  /** One revoked certificate; {@code seq}: its change-log entry's (0 before it is appended). */
  record Revoked(String serial, String spkiSha256, Instant revokedAt, String reason, Instant notAfter, long seq) {
    JsonObject json() {
      return new JsonObject().put("serial", serial).put("spki_sha256", spkiSha256).put("revoked_at", revokedAt.toString())
          .put("reason", reason).put("not_after", notAfter.toString());
    }

    static Revoked of(JsonObject d, long seq) {
      return new Revoked(d.getString("serial"), d.getString("spki_sha256"), Instant.parse(d.getString("revoked_at")), d.getString("reason"),
          Instant.parse(d.getString("not_after")), seq);
    }
  }

  /**
   * The list at a version. {@code since}: the version this replica loaded its list at; from it on, it
   * has applied every revocation itself, so it can tell a node at any version from {@code since} to
   * {@code version} what came after (an older version: only the whole list says what is left).
   */
  record State(long version, List<Revoked> revoked, long since) {
    /** Whether a node that holds {@code held} can be sent only what came after it. */
    boolean holdsAllSince(long held) {
      return held >= since && held <= version;
    }
  }

  private record Crl(long version, String issuer, Instant signedAt, byte[] der) {}

  private final Vertx vertx;
  private final Authorities authorities;
  private volatile State state = new State(0, List.of(), 0);
  private volatile Crl crl;

  Revocations(Vertx vertx, Authorities authorities) {
    this.vertx = vertx;
    this.authorities = authorities;
  }

  /**
   * The unexpired revocations and their version. An expired one is left out here (the version stays:
   * what is left is what every replica has left) and dropped from the held list by the next entry;
   * only the feed's thread writes the list.
   */
  State current() {
    State s = state;
    Instant now = Instant.now();
    // the list is in not_after order: O(1) while its first entry stands (every heartbeat with a pki block and every
    // stream of a watch pass ask), one filtered copy per expiry otherwise
    if (s.revoked().isEmpty() || s.revoked().get(0).notAfter().isAfter(now)) return s;
    Pruned p = pruned;
    if (p != null && p.from() == s && p.until().isAfter(now)) return p.state();
    List<Revoked> left = s.revoked().stream().filter(r -> r.notAfter().isAfter(now)).toList();
    State out = new State(s.version(), left, s.since());
    pruned = new Pruned(s, out, left.isEmpty() ? Instant.MAX : left.get(0).notAfter());
    return out;
  }

  /** The version of the list (the seq of its last revocation's entry), O(1). */
  long version() {
    return state.version();
  }

  /** {@link #current} of a held list with its expired entries left out, until its next expiry. */
  private record Pruned(State from, State state, Instant until) {}

  private volatile Pruned pruned;

  @Override
  public boolean apply(ChangeLog.Entry entry) {
    if (!KIND.equals(entry.kind())) return false;
    if (!"revoke".equals(entry.data().getString("op"))) return true; // a later step's entry (rotation): not this list's
    Revoked r = Revoked.of(entry.data(), entry.seq());
    Instant now = Instant.now();
    List<Revoked> next = new ArrayList<>(state.revoked());
    next.removeIf(x -> x.serial().equals(r.serial()) || !x.notAfter().isAfter(now));
    next.add(r);
    next.sort(Comparator.comparing(Revoked::notAfter).thenComparing(Revoked::serial));
    state = new State(entry.seq(), List.copyOf(next), state.since());
    return true;
  }

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    return CertificateRepository.unexpiredRevoked(snapshot).compose(rows -> CertificateRepository.revocationVersion(snapshot).map(v -> {
      state = new State(v, List.copyOf(rows), v);
      return null;
    }));
  }

  /** The CRL (DER), signed by the active intermediate: the cached one when it is current, else signed anew off the event loop. */
  Future<byte[]> crl() {
    State s = current();
    Authorities.Hierarchy h = authorities.current();
    Crl c = crl;
    if (c != null && c.version() == s.version() && c.issuer().equals(h.intermediate().id())
        && Duration.between(c.signedAt(), Instant.now()).compareTo(RESIGN) < 0) {
      return Future.succeededFuture(c.der());
    }
    return vertx.executeBlocking(() -> {
      byte[] der = sign(s, h.intermediate(), Instant.now());
      crl = new Crl(s.version(), h.intermediate().id(), Instant.now(), der);
      return der;
    }, false);
  }

  /** Signs a CRL of {@code s} by {@code issuer}: CRL number the list's version, nextUpdate a day on. */
  static byte[] sign(State s, Authorities.Authority issuer, Instant now) throws IOException, java.security.GeneralSecurityException {
    X509CertificateHolder cert = issuer.certificate();
    X509v2CRLBuilder b = new X509v2CRLBuilder(cert.getSubject(), Date.from(now));
    b.setNextUpdate(Date.from(now.plus(NEXT_UPDATE)));
    for (Revoked r : s.revoked()) {
      b.addCRLEntry(new BigInteger(r.serial(), 16), Date.from(r.revokedAt()), REASONS.getOrDefault(r.reason(), CRLReason.unspecified));
    }
    b.addExtension(Extension.cRLNumber, false, new CRLNumber(BigInteger.valueOf(s.version())));
    b.addExtension(Extension.authorityKeyIdentifier, false, new JcaX509ExtensionUtils().createAuthorityKeyIdentifier(cert.getSubjectPublicKeyInfo()));
    return b.build(Pki.signer(issuer.key())).getEncoded();
  }
}
