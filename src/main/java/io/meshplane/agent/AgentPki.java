package io.meshplane.agent;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.CertPathValidator;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.pkcs.jcajce.JcaPKCS10CertificationRequestBuilder;

/**
 * The node's MeshCA certificate as the agent holds it (API.md §11, "pki"): its own ECDSA P-256 key (made
 * here, never sent), the certificate and chain the coordinator issued for a CSR, the trust bundle and
 * the revocation list, with their versions. A heartbeat carries the serial, expiry and versions held and
 * a CSR when a certificate is due: none held, {@code renew_after} passed, expired (renewal within the
 * coordinator's grace, with the agent token alone), revoked, or issued for another WireGuard key. A
 * certificate is adopted only when its chain verifies under the bundle held and it certifies this key;
 * otherwise it is refused, logged, and asked for again later.
 *
 * <p>On the session's event loop; not thread-safe. Persisted in the state directory's {@code state.json}
 * (0600), the private key included.
 */
final class AgentPki {
  /** A refused or deferred CSR is not sent again before this (unless the answer names a later time). */
  static final long RETRY_MS = 30_000;
  /** A CSR the coordinator refused outright (renewal grace passed) is sent again only this often. */
  static final long REFUSED_MS = 15 * 60_000;

  /** What an answer changed, for the owner's logs. */
  record Applied(boolean adopted, String refused, boolean bundle, boolean revocations, long deferredS) {
    boolean any() {
      return adopted || refused != null || bundle || revocations || deferredS > 0;
    }
  }

  private KeyPair key;
  /** The key {@link #csrText} was signed with. */
  private KeyPair csrKey;
  private String csrText;
  private X509Certificate cert;
  private String certPem;
  private String chainPem;
  private String serial;
  private long notAfterMs = -1;
  private long renewAfterMs = -1;
  /** The WireGuard key the certificate was issued for: a re-key asks for a new one. */
  private String issuedFor;
  private String bundleVersion;
  private String bundlePem;
  private List<X509Certificate> bundle = List.of();
  private long revocationsVersion = -1;
  private final Set<String> revokedSerials = new HashSet<>();
  private final Set<String> revokedKeys = new HashSet<>();
  private JsonArray revocations = new JsonArray();
  private long notBeforeNextCsrMs;
  private String lastRefusal;
  /** The id of the authority that issued the certificate (as the answer said): reported back, a CA rotation counts it. */
  private String issuer;
  /** The coordinator said to renew now (the certificate's issuer no longer signs: a CA rotation). */
  private boolean renewNow;

  // ---- the heartbeat's pki block ----

  /** A CSR went out and no answer has come back yet. */
  private boolean csrInFlight;

  /** Whether the next heartbeat carries a CSR. */
  boolean wantsCsr(long nowMs, String wireguardKey) {
    if (nowMs < notBeforeNextCsrMs) return false;
    return cert == null || renewNow || nowMs >= renewAfterMs || nowMs >= notAfterMs || revoked(serial, spkiSha256(cert.getPublicKey()))
        || !wireguardKey.equals(issuedFor);
  }

  /** Appends {@code ,"pki":{…}}: what is held, and a CSR when one is due. */
  void write(StringBuilder sb, long nowMs, String wireguardKey) {
    JsonText.key(sb.append(','), "pki").append('{');
    boolean first = true;
    if (serial != null) {
      JsonText.key(sb, "serial");
      JsonText.string(sb, serial).append(',');
      JsonText.key(sb, "not_after");
      JsonText.string(sb, Instant.ofEpochMilli(notAfterMs).toString());
      first = false;
    }
    if (bundleVersion != null) {
      JsonText.key(first ? sb : sb.append(','), "bundle");
      JsonText.string(sb, bundleVersion);
      first = false;
    }
    if (revocationsVersion >= 0) {
      JsonText.key(first ? sb : sb.append(','), "revocations").append(revocationsVersion);
      first = false;
    }
    if (issuer != null && serial != null) {
      JsonText.key(first ? sb : sb.append(','), "issuer");
      JsonText.string(sb, issuer);
      first = false;
    }
    if (wantsCsr(nowMs, wireguardKey)) {
      JsonText.key(first ? sb : sb.append(','), "csr");
      JsonText.string(sb, csr());
      // one CSR in flight: the answer adopts, defers or refuses it; a lost answer (or a coordinator without MeshCA) waits
      notBeforeNextCsrMs = nowMs + RETRY_MS;
      csrInFlight = true;
    }
    sb.append('}');
  }

  /** Reissue operations under way: the operation id and the serial held when it came. */
  private final java.util.Map<String, String> reissues = new java.util.HashMap<>();

  /**
   * The heartbeat that carried a CSR got no answer (no coordinator reached, or a 5xx): nothing was signed
   * for it, so the next heartbeat carries the CSR again rather than waiting {@link #RETRY_MS}.
   */
  void unanswered() {
    if (csrInFlight) notBeforeNextCsrMs = 0;
    csrInFlight = false;
  }

  /** The least a failed heartbeat's retry may be capped at ({@link #retryCapMs}). */
  static final long MIN_URGENT_RETRY_MS = 1000;

  /**
   * The longest a failed heartbeat may wait before its retry, for the certificate held:
   * {@code Long.MAX_VALUE} (the back-off decides) when none is held or it is not due; when it is due, a
   * quarter of the time it has left, at most the interval and at least {@link #MIN_URGENT_RETRY_MS}, so
   * that a node renews within seconds of the coordinator's return however long it was away before
   * its certificate runs out; when it has expired (renewal within the grace), the interval. Only the
   * nodes whose certificate is due retry faster, and never faster than once a second.
   */
  long retryCapMs(long nowMs, long intervalMs) {
    if (cert == null || !(renewNow || nowMs >= renewAfterMs || nowMs >= notAfterMs)) return Long.MAX_VALUE;
    if (nowMs >= notAfterMs) return Math.max(MIN_URGENT_RETRY_MS, intervalMs);
    return Math.max(MIN_URGENT_RETRY_MS, Math.min(intervalMs, (notAfterMs - nowMs) / 4));
  }

  boolean holdsCertificate() {
    return cert != null;
  }

  /**
   * A reissue operation {@code opId}: the first time, asks for a new certificate at the next heartbeat
   * (a CSR for the same key) and returns null; later, the new serial once a certificate other than the
   * one held then is adopted, null until then.
   */
  String reissue(String opId) {
    String before = reissues.get(opId);
    if (before == null) {
      reissues.put(opId, serial);
      renewNow = true;
      notBeforeNextCsrMs = 0;
      return null;
    }
    if (serial != null && !serial.equals(before)) {
      reissues.remove(opId);
      return serial;
    }
    return null;
  }

  /** The bundle version held ("" for none): the watch stream's {@code pki_bundle}. */
  String bundleVersionHeld() {
    return bundleVersion == null ? "" : bundleVersion;
  }

  /**
   * A PKCS#10 CSR for this node's key (made at the first call), base64 of its DER; the coordinator ignores its names.
   * Signed once per key: a deferred CSR sent again is the same text (the simulator makes the first one on a worker).
   */
  String csr() {
    try {
      if (key == null || revoked(null, spkiSha256(key.getPublic()))) key = newKey();
      if (csrKey != key) {
        var b = new JcaPKCS10CertificationRequestBuilder(new X500Principal("CN=meshplane-agent"), key.getPublic());
        csrText = Base64.getEncoder().encodeToString(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key.getPrivate())).getEncoded());
        csrKey = key;
      }
      return csrText;
    } catch (Exception e) {
      throw new IllegalStateException("could not build a CSR: " + e.getMessage(), e);
    }
  }

  // ---- an answer's pki block ----

  /** Applies an answer's {@code pki} block. */
  Applied apply(JsonObject p, long nowMs) {
    csrInFlight = false;
    boolean bundleChanged = false;
    if (p.getValue("bundle") instanceof JsonObject b && b.getValue("version") instanceof String v && b.getValue("pem") instanceof String pem) {
      List<X509Certificate> roots = certificates(pem);
      if (!roots.isEmpty()) {
        bundle = roots;
        bundlePem = pem;
        bundleVersion = v;
        bundleChanged = true;
      }
    }
    boolean revChanged = false;
    if (p.getValue("revocations") instanceof JsonObject r && r.getValue("version") instanceof Number v && v.longValue() > revocationsVersion) {
      if (r.getValue("items") instanceof JsonArray items) {
        revocations = new JsonArray();
        revokedSerials.clear();
        revokedKeys.clear();
        addRevoked(items);
      } else if (r.getValue("added") instanceof JsonArray added) {
        addRevoked(added);
      }
      revocationsVersion = v.longValue();
      revChanged = true;
    }
    dropExpiredRevocations(nowMs);
    long deferred = 0;
    if (p.getValue("deferred") instanceof JsonObject d) {
      deferred = d.getValue("retry_after_s") instanceof Number n ? Math.max(1, n.longValue()) : RETRY_MS / 1000;
      notBeforeNextCsrMs = nowMs + deferred * 1000;
    }
    // a CA rotation: the certificate's issuer no longer signs; the next heartbeat sends a CSR (the budget spreads them)
    if (p.getValue("renew") instanceof JsonObject && cert != null) renewNow = true;
    boolean adopted = false;
    String refused = null;
    if (p.getValue("refused") instanceof JsonObject no) {
      // the coordinator will not issue (the last certificate expired beyond its renewal grace): ask rarely, say why
      refused = "refused by the coordinator: " + (no.getValue("detail") instanceof String d ? d : "no reason given");
      lastRefusal = refused;
      notBeforeNextCsrMs = nowMs + REFUSED_MS;
    }
    if (p.getValue("certificate") instanceof JsonObject c) {
      refused = adopt(c, nowMs);
      adopted = refused == null;
      lastRefusal = refused;
      if (refused != null) notBeforeNextCsrMs = nowMs + RETRY_MS;
    }
    return new Applied(adopted, refused, bundleChanged, revChanged, deferred);
  }

  /** Takes an issued certificate when its chain verifies under the bundle and it certifies this key; else says why not. */
  private String adopt(JsonObject c, long nowMs) {
    if (!(c.getValue("pem") instanceof String pem) || !(c.getValue("chain") instanceof String chain)) return "no pem or chain";
    List<X509Certificate> leaf = certificates(pem);
    List<X509Certificate> inter = certificates(chain);
    if (leaf.size() != 1 || inter.isEmpty()) return "unreadable certificate or chain";
    X509Certificate x = leaf.get(0);
    if (key == null || !x.getPublicKey().equals(key.getPublic())) return "not for this node's key";
    String why = verify(x, inter, nowMs);
    if (why != null) return why;
    cert = x;
    certPem = pem;
    chainPem = chain;
    serial = hex(x.getSerialNumber());
    notAfterMs = x.getNotAfter().getTime();
    renewAfterMs = c.getValue("renew_after") instanceof String ra ? parse(ra, notAfterMs) : notAfterMs;
    issuedFor = c.getValue("wireguard_key") instanceof String w ? w : null;
    issuer = c.getValue("issuer") instanceof String i ? i : null;
    renewNow = false;
    notBeforeNextCsrMs = 0;
    return null;
  }

  /** The chain {@code leaf, intermediates…} under the bundle's roots at {@code nowMs}; null when it verifies, else why not. */
  String verify(X509Certificate leaf, List<X509Certificate> intermediates, long nowMs) {
    if (bundle.isEmpty()) return "no trust bundle held";
    // the shortest prefix of the chain that ends under a root held: during a root rotation a chain ends with the new root
    // cross-signed by the old one, which a node holding the new root does not need (and PKIX would not take past its anchor)
    String why = null;
    for (int k = 0; k <= intermediates.size(); k++) {
      why = validate(leaf, intermediates.subList(0, k), nowMs);
      if (why == null) break;
    }
    if (why != null) return why;
    for (X509Certificate c : intermediates) {
      if (revoked(hex(c.getSerialNumber()), spkiSha256(c.getPublicKey()))) return "revoked intermediate";
    }
    return revoked(hex(leaf.getSerialNumber()), spkiSha256(leaf.getPublicKey())) ? "revoked" : null;
  }

  private String validate(X509Certificate leaf, List<X509Certificate> intermediates, long nowMs) {
    try {
      List<X509Certificate> path = new ArrayList<>();
      path.add(leaf);
      path.addAll(intermediates);
      Set<TrustAnchor> anchors = new HashSet<>();
      for (X509Certificate r : bundle) anchors.add(new TrustAnchor(r, null));
      PKIXParameters params = new PKIXParameters(anchors);
      params.setRevocationEnabled(false); // revocation: the list this agent holds, by serial and by key
      params.setDate(new Date(nowMs));
      CertPathValidator.getInstance("PKIX").validate(CertificateFactory.getInstance("X.509").generateCertPath(path), params);
      return null;
    } catch (GeneralSecurityException e) {
      return "untrusted: " + e.getMessage();
    }
  }

  /** The verdict on this node's own certificate: {@code valid}, {@code none}, {@code expired}, {@code revoked}, or {@code untrusted: …}. */
  String verdict(long nowMs) {
    if (cert == null) return "none";
    if (nowMs >= notAfterMs) return "expired";
    String why = verify(cert, certificates(chainPem), nowMs);
    return why == null ? "valid" : why;
  }

  // ---- persistence and /info ----

  JsonObject toJson() {
    JsonObject j = new JsonObject();
    if (key != null) j.put("private_key", Base64.getEncoder().encodeToString(key.getPrivate().getEncoded()))
        .put("public_key", Base64.getEncoder().encodeToString(key.getPublic().getEncoded()));
    if (cert != null) j.put("certificate", certPem).put("chain", chainPem).put("renew_after", Instant.ofEpochMilli(renewAfterMs).toString())
        .put("issued_for", issuedFor).put("issuer", issuer).put("renew_now", renewNow);
    if (bundleVersion != null) j.put("bundle", new JsonObject().put("version", bundleVersion).put("pem", bundlePem));
    if (revocationsVersion >= 0) j.put("revocations", new JsonObject().put("version", revocationsVersion).put("items", revocations.copy()));
    return j;
  }

  static AgentPki restore(JsonObject j, long nowMs) {
    AgentPki p = new AgentPki();
    if (j == null) return p;
    try {
      if (j.getValue("private_key") instanceof String priv && j.getValue("public_key") instanceof String pub) {
        KeyFactory f = KeyFactory.getInstance("EC");
        PrivateKey k = f.generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(priv)));
        PublicKey q = f.generatePublic(new X509EncodedKeySpec(Base64.getDecoder().decode(pub)));
        p.key = new KeyPair(q, k);
      }
    } catch (GeneralSecurityException | IllegalArgumentException e) {
      p.key = null; // a new key and CSR at the next heartbeat
    }
    if (j.getValue("bundle") instanceof JsonObject b) p.apply(new JsonObject().put("bundle", b), nowMs);
    if (j.getValue("revocations") instanceof JsonObject r) p.apply(new JsonObject().put("revocations", r), nowMs);
    if (j.getValue("certificate") instanceof String c && j.getValue("chain") instanceof String chain) {
      JsonObject cert = new JsonObject().put("pem", c).put("chain", chain).put("renew_after", j.getValue("renew_after"))
          .put("wireguard_key", j.getValue("issued_for")).put("issuer", j.getValue("issuer"));
      // checked again under the bundle held; an expired one is kept (its serial is reported, and a CSR renews it within the grace)
      List<X509Certificate> leaf = certificates(c);
      if (leaf.size() == 1) p.adopt(cert, Math.min(nowMs, leaf.get(0).getNotAfter().getTime() - 1));
      p.renewNow = p.cert != null && Boolean.TRUE.equals(j.getValue("renew_now"));
    }
    return p;
  }

  JsonObject info(long nowMs) {
    JsonObject j = new JsonObject().put("verdict", verdict(nowMs));
    if (cert != null) {
      j.put("serial", serial).put("not_after", Instant.ofEpochMilli(notAfterMs).toString())
          .put("renew_after", Instant.ofEpochMilli(renewAfterMs).toString()).put("expires_in_s", Math.max(0, (notAfterMs - nowMs) / 1000))
          .put("subject_alt_names", sans()).put("issuer", issuer).put("renew_now", renewNow);
    }
    j.put("bundle", bundleVersion).put("revocations", revocationsVersion).put("revoked", revocations.size());
    if (lastRefusal != null) j.put("last_refused", lastRefusal);
    return j;
  }

  /** Seconds until the certificate expires (negative once it has), or null without one. */
  Long expiresInSeconds(long nowMs) {
    return cert == null ? null : (notAfterMs - nowMs) / 1000;
  }

  String serial() {
    return serial;
  }

  /** An immutable copy for the mesh TLS listener and dialer (read at each handshake, off this event loop). */
  MeshIdentity identity() {
    boolean usable = cert != null && key != null && cert.getPublicKey().equals(key.getPublic());
    List<X509Certificate> chain = new ArrayList<>();
    if (usable) {
      chain.add(cert);
      chain.addAll(certificates(chainPem));
    }
    return new MeshIdentity(usable ? key.getPrivate() : null, chain, bundle, revokedSerials, revokedKeys, revocationsVersion);
  }

  long revocationsVersion() {
    return revocationsVersion;
  }

  /** Whether a peer's certificate (serial, or its key) is on the revocation list held. */
  boolean revoked(String peerSerial, String peerSpkiSha256) {
    return peerSerial != null && revokedSerials.contains(peerSerial) || peerSpkiSha256 != null && revokedKeys.contains(peerSpkiSha256);
  }

  // ---- helpers ----

  private JsonArray sans() {
    JsonArray out = new JsonArray();
    try {
      Collection<List<?>> names = cert.getSubjectAlternativeNames();
      if (names != null) for (List<?> n : names) out.add(String.valueOf(n.get(1)));
    } catch (GeneralSecurityException e) {
      // none shown
    }
    return out;
  }

  private void addRevoked(JsonArray items) {
    for (Object o : items) {
      if (!(o instanceof JsonObject r)) continue;
      String s = r.getValue("serial") instanceof String x ? x : null;
      String k = r.getValue("spki_sha256") instanceof String x ? x : null;
      if (s == null && k == null) continue;
      if (s != null) revokedSerials.add(s);
      if (k != null) revokedKeys.add(k);
      revocations.add(r.copy());
    }
  }

  private void dropExpiredRevocations(long nowMs) {
    JsonArray left = new JsonArray();
    for (int i = 0; i < revocations.size(); i++) {
      JsonObject r = revocations.getJsonObject(i);
      if (!(r.getValue("not_after") instanceof String na) || parse(na, Long.MAX_VALUE) > nowMs) left.add(r);
    }
    if (left.size() == revocations.size()) return;
    revokedSerials.clear();
    revokedKeys.clear();
    revocations = new JsonArray();
    addRevoked(left);
  }

  static List<X509Certificate> certificates(String pem) {
    if (pem == null) return List.of();
    try {
      List<X509Certificate> out = new ArrayList<>();
      for (var c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)))) {
        out.add((X509Certificate) c);
      }
      return out;
    } catch (GeneralSecurityException e) {
      return List.of();
    }
  }

  static String spkiSha256(PublicKey k) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(k.getEncoded()));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A serial as the coordinator writes it: lower-case hex, at least 32 digits. */
  static String hex(java.math.BigInteger serial) {
    String h = serial.toString(16);
    return "0".repeat(Math.max(0, 32 - h.length())) + h;
  }

  private static long parse(String t, long otherwise) {
    try {
      return Instant.parse(t).toEpochMilli();
    } catch (RuntimeException e) {
      return otherwise;
    }
  }

  private static KeyPair newKey() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"));
    return g.generateKeyPair();
  }
}
